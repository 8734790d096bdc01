package cuda

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
)

// joinInterp runs the hash join kernels over memory in the PTX interpreter in the order
// HashJoin launches them, the scans done on the host as the scan kernels leave them (running
// sums in place).
type joinInterp struct {
	t    *testing.T
	mem  map[uint64]uint64
	next uint64
}

func (j *joinInterp) alloc(n int) uint64 {
	at := j.next
	for i := 0; i < max(n, 1); i++ {
		j.mem[at+uint64(8*i)] = 0
	}
	j.next += uint64(max(n, 1))*8 + 1<<12
	return at
}

func (j *joinInterp) keys(k [][]int64) uint64 {
	n := len(k[0])
	at := j.alloc(len(k) * n)
	for c, col := range k {
		for i, x := range col {
			j.mem[at+uint64(8*(c*n+i))] = uint64(x)
		}
	}
	return at
}

func (j *joinInterp) run(text string, threads int, params map[string]uint64) {
	p := ptxtest.Parse(j.t, text)
	for b := 0; b < int(joinBlocks(threads)); b++ {
		ptxtest.Run(j.t, p, b, 0, params, j.mem, nil)
	}
}

func (j *joinInterp) words(at uint64, n int) []uint64 {
	out := make([]uint64, n)
	for i := range out {
		out[i] = j.mem[at+uint64(8*i)]
	}
	return out
}

func (j *joinInterp) scan(at uint64, n int) {
	var run uint64
	for i := 0; i < n; i++ {
		run += j.mem[at+uint64(8*i)]
		j.mem[at+uint64(8*i)] = run
	}
}

// join is hashJoin's sequence of kernels in the interpreter.
func (j *joinInterp) join(build, probe [][]int64, mode JoinMode) (res *JoinResult, most uint64) {
	nb, np := len(build[0]), len(probe[0])
	size := joinTableSize(nb)
	bk, pk := j.keys(build), j.keys(probe)
	owner, ends, slot, rows, mostAt := j.alloc(size), j.alloc(size), j.alloc(nb), j.alloc(nb), j.alloc(1)
	v, tg := "8.0", "sm_90"
	ncols := uint64(len(build))
	j.run(ptx.JoinBuildPTX(v, tg), nb, map[string]uint64{"keys": bk, "n": uint64(nb), "ncols": ncols, "owner": owner, "mask": uint64(size - 1), "slot": slot, "counts": ends, "most": mostAt})
	most = j.mem[mostAt]
	j.scan(ends, size)
	starts := j.alloc(size)
	for i, w := range j.words(ends, size) {
		j.mem[starts+uint64(8*i)] = w
	}
	j.run(ptx.JoinPlacePTX(v, tg), nb, map[string]uint64{"slot": slot, "n": uint64(nb), "cursor": starts, "rows": rows})
	j.run(ptx.JoinOrderPTX(v, tg), size, map[string]uint64{"starts": starts, "ends": ends, "nslots": uint64(size), "rows": rows})
	match, emit := j.alloc(np), j.alloc(np)
	j.run(ptx.JoinProbeCountPTX(v, tg), np, map[string]uint64{"keys": pk, "n": uint64(np), "ncols": ncols, "bkeys": bk, "nb": uint64(nb), "owner": owner, "mask": uint64(size - 1),
		"starts": starts, "ends": ends, "match": match, "emit": emit, "mode": uint64(mode)})
	j.scan(emit, np)
	total := int(j.mem[emit+uint64(8*(np-1))])
	outp, outb, matched := j.alloc(total), j.alloc(total), j.alloc(nb)
	j.run(ptx.JoinProbePairsPTX(v, tg), np, map[string]uint64{"n": uint64(np), "match": match, "emit": emit, "starts": starts, "ends": ends, "rows": rows,
		"outp": outp, "outb": outb, "matched": matched, "mode": uint64(mode)})
	res = &JoinResult{Probe: narrowRows(j.words(outp, total))}
	if mode >= JoinSemi {
		return res, most
	}
	res.Build = narrowRows(j.words(outb, total))
	for _, w := range j.words(matched, nb) {
		res.Matched = append(res.Matched, w != 0)
	}
	return res, most
}

// joinCase is random keys of both sides: one or two columns (the second a null flag), few
// distinct values so keys repeat on both sides, some only on one.
func joinCase(r *rand.Rand, n, distinct int, flag bool, shift int64) [][]int64 {
	k := [][]int64{make([]int64, n)}
	if flag {
		k = append(k, make([]int64, n))
	}
	for i := range k[0] {
		k[0][i] = int64(r.IntN(distinct)) + shift
		if flag && r.IntN(7) == 0 {
			k[0][i], k[1][i] = 0, 1
		}
	}
	return k
}

// TestHashJoinPTX runs the device hash join's kernels in the PTX interpreter and checks their
// pairs against dataframe/hashjoin's table: for every probe mode, keys of one column and with
// a null flag, the same pairs in the same order (probe rows in order, each one's build rows in
// order), the same matched build rows, and the longest key run JoinBuild reports.
func TestHashJoinPTX(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 1))
	for _, c := range []struct {
		nb, np, distinct int
		flag             bool
	}{{300, 500, 90, false}, {257, 300, 400, true}, {40, 700, 3, true}, {1, 5, 1, false}} {
		build := joinCase(r, c.nb, c.distinct, c.flag, 0)
		probe := joinCase(r, c.np, c.distinct, c.flag, int64(c.distinct/5))
		tab, err := hashjoin.Build(build)
		if err != nil {
			t.Fatal(err)
		}
		runs := map[[2]int64]uint64{}
		var longest uint64
		for i := range build[0] {
			k := [2]int64{build[0][i]}
			if c.flag {
				k[1] = build[1][i]
			}
			runs[k]++
			longest = max(longest, runs[k])
		}
		for _, mode := range []JoinMode{JoinInner, JoinKeep, JoinSemi, JoinAnti} {
			j := &joinInterp{t: t, mem: map[uint64]uint64{}, next: 1 << 20}
			got, most := j.join(build, probe, mode)
			if most != longest {
				t.Errorf("%+v mode %d: longest run %d, want %d", c, mode, most, longest)
			}
			if mode >= JoinSemi {
				in, err := tab.Contains(probe)
				if err != nil {
					t.Fatal(err)
				}
				var want []int32
				for i, ok := range in {
					if ok == (mode == JoinSemi) {
						want = append(want, int32(i))
					}
				}
				if !slices.Equal(got.Probe, want) {
					t.Errorf("%+v mode %d: %d rows, want %d (or another order)", c, mode, len(got.Probe), len(want))
				}
				continue
			}
			pi, bi, matched, err := tab.Probe(probe, mode == JoinKeep)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got.Probe, pi) || !slices.Equal(got.Build, bi) {
				t.Errorf("%+v mode %d: %d pairs, hashjoin %d (or another order)", c, mode, len(got.Probe), len(pi))
			}
			if !slices.Equal(got.Matched, matched) {
				t.Errorf("%+v mode %d: matched build rows differ", c, mode)
			}
		}
	}
}

// TestHashPartitionPTX: the partition kernel puts every row where hashjoin.Partition does,
// for one and two key columns and partition counts that are and are not powers of two.
func TestHashPartitionPTX(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 2))
	for _, flag := range []bool{false, true} {
		keys := joinCase(r, 700, 1<<20, flag, -1<<19)
		for _, parts := range []int{1, 3, 8, 13} {
			want, err := hashjoin.Partition(keys, parts)
			if err != nil {
				t.Fatal(err)
			}
			j := &joinInterp{t: t, mem: map[uint64]uint64{}, next: 1 << 20}
			k, out := j.keys(keys), j.alloc(700)
			j.run(ptx.JoinPartPTX("8.0", "sm_90"), 700, map[string]uint64{"keys": k, "n": 700, "ncols": uint64(len(keys)), "parts": uint64(parts), "out": out})
			if got := narrowRows(j.words(out, 700)); !slices.Equal(got, want) {
				t.Errorf("flag %v, %d partitions: the kernel's partitions differ from hashjoin's", flag, parts)
			}
		}
	}
}
