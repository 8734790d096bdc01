package gpuarray

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
)

// TestGPUJoinOnGPU joins key columns persisted on the GPU in several chunks (an int32 key held
// narrow, an int64 one, and the int32 key looked up in a table as a categorical's codes are)
// with JoinOnGPU in every mode, the output split at probe rows (one piece empty) and in the
// order of hash partitions (more than the keys' partitions with rows, so some are empty), and
// a build side with a key on more rows than the device orders (laid out on the host, which
// HostNote names): the rows stay on the GPU (int32, a chunk per non-empty piece) and equal
// dataframe/hashjoin's pairs piece for piece; TakeRowsAtOnGPU gathers a float64 column at
// them there, equal to the host's gather (zero at -1).
func TestGPUJoinOnGPU(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(33, 42))
	const nb, np, card = 40000, 300001, 30000
	draw := func(n, card, shift int) ([]int32, []int64) {
		a, b := make([]int32, n), make([]int64, n)
		for i := range a {
			a[i] = int32(r.IntN(card) + shift)
			b[i] = int64(r.IntN(3)) - 1<<40
		}
		return a, b
	}
	b32, b64 := draw(nb, card, 0)
	p32, p64 := draw(np, card, card/4)
	skew := slices.Clone(b32)
	for i := range 5000 {
		skew[i] = 7
	}
	table := make([]int64, card+card/4)
	for i := range table {
		table[i] = int64(len(table) - 1 - i)
	}
	vals := make([]float64, nb)
	for i := range vals {
		vals[i] = r.NormFloat64()
	}
	persist := func(x *Array) *Array {
		p := x.Persist(OnGPU())
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(p.Release)
		return p
	}
	gb32, gb64 := persist(FromSliceInt32(b32, Chunks(15000))), persist(FromSliceInt64(b64, Chunks(15000)))
	gskew := persist(FromSliceInt32(skew, Chunks(15000)))
	gp32, gp64 := persist(FromSliceInt32(p32, Chunks(70000))), persist(FromSliceInt64(p64, Chunks(70000)))
	gvals := persist(FromSlice(vals, Chunks(15000)))
	widen := func(v []int32, tab []int64) []int64 {
		out := make([]int64, len(v))
		for i, x := range v {
			out[i] = int64(x)
			if tab != nil {
				out[i] = tab[x]
			}
		}
		return out
	}
	for _, c := range []struct {
		name         string
		build, probe []*Array
		bk, pk       hashjoin.Keys
		btab         [][]int64
	}{
		{"int32", []*Array{gb32}, []*Array{gp32}, hashjoin.Keys{widen(b32, nil)}, hashjoin.Keys{widen(p32, nil)}, nil},
		{"int32 and int64", []*Array{gb32, gb64}, []*Array{gp32, gp64}, hashjoin.Keys{widen(b32, nil), b64}, hashjoin.Keys{widen(p32, nil), p64}, nil},
		{"table", []*Array{gb32}, []*Array{gp32}, hashjoin.Keys{widen(b32, table)}, hashjoin.Keys{widen(p32, nil)}, [][]int64{table}},
		{"skewed", []*Array{gskew}, []*Array{gp32}, hashjoin.Keys{widen(skew, nil)}, hashjoin.Keys{widen(p32, nil)}, nil},
	} {
		tab, err := hashjoin.Build(c.bk)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []JoinMode{JoinInner, JoinKeep, JoinSemi, JoinAnti} {
			var wp, wb []int32
			if mode >= JoinSemi {
				in, err := tab.Contains(c.pk)
				if err != nil {
					t.Fatal(err)
				}
				for i, ok := range in {
					if ok == (mode == JoinSemi) {
						wp, wb = append(wp, int32(i)), append(wb, -1)
					}
				}
			} else if wp, wb, _, err = tab.Probe(c.pk, mode == JoinKeep); err != nil {
				t.Fatal(err)
			}
			for _, parts := range []int{0, 7} {
				what := fmt.Sprintf("%s mode %d parts %d", c.name, mode, parts)
				k := HeldJoinKeys{Build: c.build, Probe: c.probe, BuildTables: c.btab, Mode: mode, Parts: parts, BuildRows: true}
				var wantP, wantB [][]int32
				if parts == 0 {
					k.Split = []int{100000, 0, np - 100000}
					lo := 0
					for _, n := range k.Split {
						var a, b []int32
						for i, j := range wp {
							if int(j) >= lo && int(j) < lo+n {
								a, b = append(a, j), append(b, wb[i])
							}
						}
						wantP, wantB = append(wantP, a), append(wantB, b)
						lo += n
					}
				} else {
					pt, err := hashjoin.Partition(c.pk, parts)
					if err != nil {
						t.Fatal(err)
					}
					wantP, wantB = make([][]int32, parts), make([][]int32, parts)
					for i, j := range wp {
						wantP[pt[j]], wantB[pt[j]] = append(wantP[pt[j]], j), append(wantB[pt[j]], wb[i])
					}
				}
				res, why, err := JoinOnGPU(k, OnGPU())
				if err != nil || why != "" {
					t.Fatalf("%s: why %q, err %v", what, why, err)
				}
				if (c.name == "skewed") != strings.Contains(res.HostNote, "laid out in key order on the host") {
					t.Fatalf("%s: host note %q", what, res.HostNote)
				}
				var lens []int
				var allP, allB []int32
				for i := range wantP {
					if res.Lens[i] != len(wantP[i]) {
						t.Fatalf("%s: piece %d has %d rows, want %d", what, i, res.Lens[i], len(wantP[i]))
					}
					if len(wantP[i]) > 0 {
						lens = append(lens, len(wantP[i]))
					}
					allP, allB = append(allP, wantP[i]...), append(allB, wantB[i]...)
				}
				check := func(side string, a *Array, want []int32) {
					t.Helper()
					if !strings.HasPrefix(a.Where(), "gpu ") || !slices.Equal(a.Chunks()[0], lens) {
						t.Fatalf("%s: %s rows held on %q in chunks %v, want %v", what, side, a.Where(), a.Chunks()[0], lens)
					}
					got, err := a.ToSliceInt64(OnGPU())
					if err != nil {
						t.Fatal(err)
					}
					for i, x := range want {
						if got[i] != int64(x) {
							t.Fatalf("%s: %s row %d is %d, want %d", what, side, i, got[i], x)
						}
					}
				}
				check("probe", res.Probe, allP)
				if mode == JoinSemi {
					if res.Build != nil {
						t.Fatalf("%s: build rows of a semi join", what)
					}
					continue
				}
				check("build", res.Build, allB)
				if mode != JoinKeep || parts != 7 {
					continue
				}
				out, why, err := TakeRowsAtOnGPU([]*Array{gvals}, res.Build, OnGPU())
				if err != nil || why != "" {
					t.Fatalf("%s: take: why %q, err %v", what, why, err)
				}
				if !strings.HasPrefix(out[0].Where(), "gpu ") || !slices.Equal(out[0].Chunks()[0], lens) {
					t.Fatalf("%s: gathered on %q in chunks %v", what, out[0].Where(), out[0].Chunks()[0])
				}
				got, err := out[0].ToSlice(OnGPU())
				if err != nil {
					t.Fatal(err)
				}
				for i, row := range allB {
					want := 0.0
					if row >= 0 {
						want = vals[row]
					}
					if got[i] != want {
						t.Fatalf("%s: gathered element %d (row %d) is %v, want %v", what, i, row, got[i], want)
					}
				}
			}
		}
	}
}

// TestJoinOnGPUWithoutGPU: without a GPU compute, JoinOnGPU and TakeRowsAtOnGPU join and
// gather nothing and say why; a mode out of range and unequal key counts are errors.
func TestJoinOnGPUWithoutGPU(t *testing.T) {
	k := FromSliceInt32([]int32{1, 2, 2}, Chunks(2))
	res, why, err := JoinOnGPU(HeldJoinKeys{Build: []*Array{k}, Probe: []*Array{k}, Split: []int{3}})
	if err != nil || res != nil || why != "not a GPU compute" {
		t.Fatalf("res %v, why %q, err %v", res, why, err)
	}
	if _, _, err := JoinOnGPU(HeldJoinKeys{Build: []*Array{k}, Probe: []*Array{k}, Mode: JoinAnti + 1}); err == nil {
		t.Fatal("mode out of range: no error")
	}
	if _, _, err := JoinOnGPU(HeldJoinKeys{Build: []*Array{k, k}, Probe: []*Array{k}}); err == nil {
		t.Fatal("two build keys and one probe key: no error")
	}
	out, why, err := TakeRowsAtOnGPU([]*Array{k}, k)
	if err != nil || out != nil || why != "not a GPU compute" {
		t.Fatalf("take: out %v, why %q, err %v", out, why, err)
	}
}
