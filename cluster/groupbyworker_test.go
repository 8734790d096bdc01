package cluster

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// hostDense is denseDevice over host memory: uploads are kept words, and fold does what the
// group-aggregate kernel does (codes outside [0, groups) and NaN values skipped).
type hostDense struct{ mem [][]float64 }

func (h *hostDense) index() int { return 0 }

func (h *hostDense) upload(_ context.Context, words []float64) (driver.DevicePtr, error) {
	h.mem = append(h.mem, append([]float64(nil), words...))
	return driver.DevicePtr(len(h.mem)), nil
}

func (h *hostDense) fold(_ context.Context, groups int, float bool, states ptx.GroupStates, codes, vals driver.DevicePtr, n int64) (*cuda.GroupAggResult, error) {
	cw, vw := h.mem[codes-1], h.mem[vals-1]
	if int64(len(cw)) != n || int64(len(vw)) != n {
		return nil, fmt.Errorf("fold of %d rows over %d codes and %d values", n, len(cw), len(vw))
	}
	on := func(s ptx.GroupStates) bool { return states&s != 0 }
	r := &cuda.GroupAggResult{Count: make([]int64, groups)}
	fill := func(v float64) []float64 {
		s := make([]float64, groups)
		for i := range s {
			s[i] = v
		}
		return s
	}
	filli := func(v int64) []int64 {
		s := make([]int64, groups)
		for i := range s {
			s[i] = v
		}
		return s
	}
	if on(ptx.GroupSumSq) {
		r.SumSq = make([]float64, groups)
	}
	if float {
		if on(ptx.GroupSum) {
			r.SumF = make([]float64, groups)
		}
		if on(ptx.GroupMin) {
			r.MinF = fill(math.Inf(1))
		}
		if on(ptx.GroupMax) {
			r.MaxF = fill(math.Inf(-1))
		}
	} else {
		if on(ptx.GroupSum) {
			r.SumI = make([]int64, groups)
		}
		if on(ptx.GroupMin) {
			r.MinI = filli(math.MaxInt64)
		}
		if on(ptx.GroupMax) {
			r.MaxI = filli(math.MinInt64)
		}
	}
	for i := range cw {
		g := int64(math.Float64bits(cw[i]))
		if g < 0 || g >= int64(groups) || (float && math.IsNaN(vw[i])) {
			continue
		}
		r.Count[g]++
		if float {
			x := vw[i]
			if r.SumF != nil {
				r.SumF[g] += x
			}
			if r.SumSq != nil {
				r.SumSq[g] += x * x
			}
			if r.MinF != nil {
				r.MinF[g] = math.Min(r.MinF[g], x)
			}
			if r.MaxF != nil {
				r.MaxF[g] = math.Max(r.MaxF[g], x)
			}
			continue
		}
		x := int64(math.Float64bits(vw[i]))
		if r.SumI != nil {
			r.SumI[g] += x
		}
		if r.SumSq != nil {
			r.SumSq[g] += float64(x) * float64(x)
		}
		if r.MinI != nil {
			r.MinI[g] = min(r.MinI[g], x)
		}
		if r.MaxI != nil {
			r.MaxI[g] = max(r.MaxI[g], x)
		}
	}
	return r, nil
}

func (h *hostDense) free() { h.mem = nil }

func keptOf(t *testing.T, v any) any {
	t.Helper()
	s, err := dtype.Of(v)
	if err != nil {
		t.Fatal(err)
	}
	return []*plan.Output{{Shape: []int{s.Len()}, Data: s}}
}

// TestGroupPartialDenseMatchesHashagg runs a GPU worker's partition aggregation (dense codes,
// per-column codes for null integers, NaN for null floats, the tables to a partial) over a
// host emulation of the group-aggregate kernel, for every aggregation the dense path takes,
// and checks each group's results equal those of hashagg on the CPU path, and that the two
// kinds of partial combine.
func TestGroupPartialDenseMatchesHashagg(t *testing.T) {
	open := openDenseDevice
	openDenseDevice = func() (denseDevice, error) { return &hostDense{}, nil }
	t.Cleanup(func() { openDenseDevice = open })
	const n = 5000
	k := make([]int64, n)
	kok := make([]bool, n)
	b := make([]bool, n)
	x := make([]float64, n)
	xok := make([]bool, n)
	v := make([]int64, n)
	vok := make([]bool, n)
	j := make([]int32, n)
	for i := range k {
		k[i], kok[i], b[i] = int64(i*7919%41)-20, i%19 != 0, i%3 == 0
		x[i], xok[i] = float64(i%977)/3-100, i%7 != 0
		if i%31 == 0 {
			x[i] = math.NaN()
		}
		v[i], vok[i] = int64(i*104729%2001)-1000, i%5 != 0
		j[i] = int32(i % 113)
	}
	ins := []any{keptOf(t, k), keptOf(t, kok), keptOf(t, b), keptOf(t, x), keptOf(t, xok), keptOf(t, v), keptOf(t, vok), keptOf(t, j)}
	var specs []hashagg.Spec
	for _, op := range []hashagg.Op{hashagg.Sum, hashagg.Mean, hashagg.Min, hashagg.Max, hashagg.Count, hashagg.Var, hashagg.Std} {
		for col := range 3 {
			specs = append(specs, hashagg.Spec{Op: op, Col: col})
		}
	}
	specs = append(specs, hashagg.Spec{Op: hashagg.Size, Col: -1})
	sp := groupSpec{Keys: []int{0, 2}, KeyValid: []int{1, -1}, Vals: []int{3, 5, 7}, ValValid: []int{4, 6, -1}, Pos: -1, Specs: specs}
	ctx := context.Background()
	gpu := &worker{cfg: WorkerConfig{Name: "gpu0", GPU: "emulated"}}
	got, where, err := gpu.groupPartial(ctx, sp, ins)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(where, "dense-code group-aggregate kernel") {
		t.Fatalf("where %q: not the dense path", where)
	}
	cpu := &worker{cfg: WorkerConfig{Name: "cpu0"}}
	want, _, err := cpu.groupPartial(ctx, sp, ins)
	if err != nil {
		t.Fatal(err)
	}
	if got.N != want.N {
		t.Fatalf("%d groups, want %d", got.N, want.N)
	}
	at := map[[2]int64]int{}
	for g := range got.N {
		at[[2]int64{got.Keys[0][g], got.Keys[1][g]}] = g
	}
	gr, wr := got.Finalize(), want.Finalize()
	for g := range want.N {
		key := [2]int64{want.Keys[0][g], want.Keys[1][g]}
		h, ok := at[key]
		if !ok {
			t.Fatalf("group %v missing from the dense partial", key)
		}
		for si := range specs {
			a, e := gr[si], wr[si]
			what := fmt.Sprintf("group %v, %v of column %d", key, specs[si].Op, specs[si].Col)
			av, ev := a.Valid == nil || a.Valid[h], e.Valid == nil || e.Valid[g]
			if av != ev || a.IsInt != e.IsInt {
				t.Fatalf("%s: valid %v int %v, want %v %v", what, av, a.IsInt, ev, e.IsInt)
			}
			switch {
			case !ev:
			case e.IsInt:
				if a.Int[h] != e.Int[g] {
					t.Fatalf("%s = %d, want %d", what, a.Int[h], e.Int[g])
				}
			default:
				if d := math.Abs(a.Float[h] - e.Float[g]); d > 1e-9*math.Max(1, math.Abs(e.Float[g])) {
					t.Fatalf("%s = %v, want %v", what, a.Float[h], e.Float[g])
				}
			}
		}
	}
	// A GPU worker's empty partitions take the CPU path: its partials combine with dense ones.
	if _, err := hashagg.Combine(got, want); err != nil {
		t.Fatalf("combine a dense partial with a hashagg one: %v", err)
	}
	t.Log(where)
}
