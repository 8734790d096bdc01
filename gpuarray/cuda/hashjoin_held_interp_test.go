package cuda

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
)

// heldInterp is heldExec in the PTX interpreter: the held join's steps (heldJoin, the code
// JoinHeld runs on a device) over memory of words, the scans done on the host as the scan
// kernels leave them, the host layout as joinOrderHost's.
type heldInterp struct {
	joinInterp
	launched []string
}

var paramName = regexp.MustCompile(`\.param \.u64 (\w+)`)

func (h *heldInterp) alloc(n int64, _ bool) (uint64, error) { return h.joinInterp.alloc(int(n)), nil }

func (h *heldInterp) upload(p uint64, w []uint64) error {
	for i, x := range w {
		h.mem[p+uint64(8*i)] = x
	}
	return nil
}

func (h *heldInterp) launch(name string, gen func(version, target string) string, threads int64, args ...uint64) error {
	text := gen("8.0", "sm_90")
	names := paramName.FindAllStringSubmatch(text, -1)
	if len(names) != len(args) {
		return fmt.Errorf("kernel %s: %d parameters, %d arguments", name, len(names), len(args))
	}
	params := map[string]uint64{}
	for i, m := range names {
		params[m[1]] = args[i]
	}
	h.run(text, int(threads), params)
	h.launched = append(h.launched, name)
	return nil
}

func (h *heldInterp) scan(p uint64, n int64) error { h.joinInterp.scan(p, int(n)); return nil }

func (h *heldInterp) word(p uint64) (uint64, error) { return h.mem[p], nil }

func (h *heldInterp) byteAt(a uint64) byte { return byte(h.mem[a&^7] >> (8 * (a & 7))) }

func (h *heldInterp) setByte(a uint64, b byte) {
	w, sh := a&^7, 8*(a&7)
	h.mem[w] = h.mem[w]&^(0xff<<sh) | uint64(b)<<sh
}

func (h *heldInterp) copyBytes(dst, src uint64, n int64) error {
	for i := range uint64(n) {
		h.setByte(dst+i, h.byteAt(src+i))
	}
	return nil
}

func (h *heldInterp) layoutHost(slot uint64, nb, size int64, starts, rows uint64) error {
	s := h.words(slot, int(nb))
	at := make([]uint64, size)
	for _, x := range s {
		at[x]++
	}
	var run uint64
	for i, c := range at {
		at[i] = run
		run += c
	}
	_ = h.upload(starts, at)
	out := make([]uint64, nb)
	for i, x := range s {
		out[at[x]] = uint64(i)
		at[x]++
	}
	return h.upload(rows, out)
}

// int32s reads n int32 rows at p.
func (h *heldInterp) int32s(p uint64, n int64) []int32 {
	out := make([]int32, n)
	for i := range out {
		a := p + uint64(4*i)
		out[i] = int32(uint32(h.mem[a&^7] >> (8 * (a & 7))))
	}
	return out
}

// key lays column values out as pieces of unit bytes (splits: rows per piece, an empty one
// among them), each piece its own allocation.
func (h *heldInterp) key(vals []int64, unit int, splits []int64, table []int64) HeldKey {
	k := HeldKey{Unit: unit, Table: table, Rows: splits}
	at := 0
	for _, r := range splits {
		p := h.joinInterp.alloc(int((r*int64(unit) + 7) / 8))
		for i := range int(r) {
			v := uint64(vals[at+i])
			if unit == 4 {
				a := p + uint64(4*i)
				w, sh := a&^7, 8*(a&7)
				h.mem[w] = h.mem[w]&^(0xffffffff<<sh) | (v&0xffffffff)<<sh
			} else {
				h.mem[p+uint64(8*i)] = v
			}
		}
		k.Pieces = append(k.Pieces, driver.DevicePtr(p))
		at += int(r)
	}
	return k
}

// threeSplits splits n rows into three pieces, the middle one empty.
func threeSplits(n int) []int64 { return []int64{int64(n / 3), 0, int64(n - n/3)} }

// TestHeldJoinPTX runs the held join's steps (heldJoin: codes encoded from int32 and word
// columns held in pieces, one of them empty, and looked up in a table; the table and probe
// kernels; the partition order's counting sort; int32 rows written and split into pieces) in
// the PTX interpreter and checks every piece against dataframe/hashjoin: keys with duplicates
// on both sides and misses on both, one and two key columns, every probe mode, the output
// split at probe rows (with an empty piece) and in the order of hash partitions (more
// partitions than keys, so some are empty), -1 build rows for unmatched rows of JoinKeep and
// for JoinAnti.
func TestHeldJoinPTX(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 40))
	for _, c := range []struct {
		nb, np, distinct int
		two, table       bool
	}{{300, 500, 90, false, false}, {120, 700, 3, false, true}, {257, 300, 40, true, false}, {1, 9, 1, false, false}} {
		build := joinCase(r, c.nb, c.distinct, false, 0)
		probe := joinCase(r, c.np, c.distinct, false, int64(c.distinct/5))
		if c.two {
			build = append(build, joinCase(r, c.nb, 2, false, 0)[0])
			probe = append(probe, joinCase(r, c.np, 2, false, 0)[0])
		}
		// With a table, the probe side's values are codes of a dictionary of their own that
		// the table maps into the build side's (as a categorical's of another dictionary).
		var table []int64
		pvals := probe
		if c.table {
			table = make([]int64, c.distinct+c.distinct/5)
			for i := range table {
				table[i] = int64(len(table) - 1 - i)
			}
			raw := make([]int64, c.np)
			mapped := make([]int64, c.np)
			for i := range raw {
				raw[i] = int64(r.IntN(len(table)))
				mapped[i] = table[raw[i]]
			}
			pvals, probe = [][]int64{raw}, [][]int64{mapped}
		}
		tab, err := hashjoin.Build(build)
		if err != nil {
			t.Fatal(err)
		}
		for _, mode := range []JoinMode{JoinInner, JoinKeep, JoinSemi, JoinAnti} {
			// The host's pairs in probe row order.
			var wp, wb []int32
			if mode >= JoinSemi {
				in, err := tab.Contains(probe)
				if err != nil {
					t.Fatal(err)
				}
				for i, ok := range in {
					if ok == (mode == JoinSemi) {
						wp, wb = append(wp, int32(i)), append(wb, -1)
					}
				}
			} else if wp, wb, _, err = tab.Probe(probe, mode == JoinKeep); err != nil {
				t.Fatal(err)
			}
			for _, parts := range []int{0, 3, 8} {
				h := &heldInterp{joinInterp: joinInterp{t: t, mem: map[uint64]uint64{}, next: 1 << 20}}
				s := &HeldJoinSpec{Mode: mode, Parts: parts, BuildRows: mode == JoinAnti}
				for col := range build {
					unit := 8
					if col == 0 {
						unit = 4
					}
					s.Build = append(s.Build, h.key(build[col], unit, threeSplits(c.nb), nil))
					s.Probe = append(s.Probe, h.key(pvals[col], 12-unit, threeSplits(c.np), table))
				}
				// Expected pieces: split at probe rows, or by the probe rows' partitions.
				var wantP, wantB [][]int32
				if parts == 0 {
					s.Split = []int64{int64(c.np / 2), 0, int64(c.np - c.np/2)}
					var lo int64
					for _, n := range s.Split {
						var p, b []int32
						for i, j := range wp {
							if int64(j) >= lo && int64(j) < lo+n {
								p, b = append(p, j), append(b, wb[i])
							}
						}
						wantP, wantB = append(wantP, p), append(wantB, b)
						lo += n
					}
				} else {
					pt, err := hashjoin.Partition(probe, parts)
					if err != nil {
						t.Fatal(err)
					}
					wantP, wantB = make([][]int32, parts), make([][]int32, parts)
					for i, j := range wp {
						q := pt[j]
						wantP[q], wantB[q] = append(wantP[q], j), append(wantB[q], wb[i])
					}
				}
				p, b, rows, ho, err := heldJoin(h, s)
				if err != nil {
					t.Fatal(err)
				}
				what := fmt.Sprintf("%+v mode %d parts %d", c, mode, parts)
				if ho != 0 {
					t.Errorf("%s: laid out on the host", what)
				}
				if len(rows) != len(wantP) {
					t.Fatalf("%s: %d pieces, want %d", what, len(rows), len(wantP))
				}
				if parts > 0 && !slices.Contains(h.launched, "gpn_join_tile_place") {
					t.Fatalf("%s: no partition order (%v)", what, h.launched)
				}
				for i := range rows {
					if rows[i] != int64(len(wantP[i])) {
						t.Fatalf("%s: piece %d has %d rows, want %d", what, i, rows[i], len(wantP[i]))
					}
					if rows[i] == 0 {
						if p[i] != 0 || (b != nil && b[i] != 0) {
							t.Fatalf("%s: piece %d of no rows has an allocation", what, i)
						}
						continue
					}
					if got := h.int32s(p[i], rows[i]); !slices.Equal(got, wantP[i]) {
						t.Fatalf("%s: piece %d's probe rows %v, want %v", what, i, got, wantP[i])
					}
					if mode == JoinSemi {
						if b != nil {
							t.Fatalf("%s: build rows of a semi join", what)
						}
						continue
					}
					if got := h.int32s(b[i], rows[i]); !slices.Equal(got, wantB[i]) {
						t.Fatalf("%s: piece %d's build rows %v, want %v", what, i, got, wantB[i])
					}
				}
			}
		}
	}
}
