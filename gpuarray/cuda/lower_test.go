package cuda

import (
	"reflect"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/kernels"
)

// seedKernel is the planner's kernel for (x + 1)[::2, ::2].sum() with x normal(10, 1) of n x n.
func seedKernel(n int) *plan.Kernel {
	half := (n + 1) / 2
	return &plan.Kernel{
		Shape: []int{half, half},
		Instrs: []plan.Instr{
			{Code: plan.Random, DType: expr.Float64, Rand: expr.RandSpec{Dist: expr.Normal, P0: 10, P1: 1, Key: [2]uint32{42, 0}},
				Src: []int{n, n}, Map: []expr.AxisMap{{Axis: 0, Step: 2}, {Axis: 1, Step: 2}}},
			{Code: plan.Const, DType: expr.Float64, Value: 1},
			{Code: plan.Binary, DType: expr.Float64, Op: expr.OpAdd, Args: []int{0, 1}},
		},
		Result: 2,
		Reduce: &plan.Reduction{Red: expr.Sum, Axes: []int{0, 1}},
	}
}

func TestLowerSeedMatchesHandWrittenTasks(t *testing.T) {
	const n, c = 2000, 300
	k := seedKernel(n)
	s, leaves, err := Lower(k)
	if err != nil {
		t.Fatal(err)
	}
	if s.Reduce != RSum || s.Rank != 2 || s.Nodes[0].Kind != NRandom || leaves[0] != 0 || leaves[1] != -1 {
		t.Fatalf("spec %+v leaves %v", s, leaves)
	}
	want := seedTasks(n, c, 2)
	// The planner's chunks of the kept (half-size) space: c/2 kept rows per source chunk.
	var got []Task
	half := (n + 1) / 2
	for r := 0; r < half; r += c / 2 {
		for q := 0; q < half; q += c / 2 {
			pt := &plan.Task{Kernel: k, Offset: []int{r, q}, Shape: []int{min(c/2, half-r), min(c/2, half-q)}}
			gt, err := lowerTask(pt, leaves, s.Leaves())
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, gt)
		}
	}
	if len(got) != len(want) {
		t.Fatalf("%d tasks, want %d", len(got), len(want))
	}
	for i := range got {
		if !reflect.DeepEqual(got[i].Dims, want[i].Dims) || !reflect.DeepEqual(got[i].Maps, want[i].Maps) {
			t.Fatalf("task %d: got %+v want %+v", i, got[i], want[i])
		}
	}
}

func TestLowerRefusesWhatTheGPUKernelDoesNotExpress(t *testing.T) {
	k := seedKernel(10)
	k.Reduce.Axes = []int{0}
	if _, _, err := Lower(k); err == nil || !strings.Contains(err.Error(), "axes") {
		t.Fatalf("partial reduction: %v", err)
	}
	k = seedKernel(10)
	k.Instrs[0] = plan.Instr{Code: plan.Range, DType: expr.Float64, Src: []int{10}, Map: []expr.AxisMap{{Axis: 0, Step: 1}}}
	if _, _, err := Lower(k); err == nil {
		t.Fatal("range leaves are not fused on the GPU")
	}
}

func TestGlobalArgIndex(t *testing.T) {
	k := &plan.Kernel{Shape: []int{10, 20}}
	pt := &plan.Task{Kernel: k, Offset: []int{4, 10}, Shape: []int{3, 5}}
	// local (1, 2) -> global (5, 12) -> 5*20 + 12.
	if g := globalIndex(pt, 1*5+2); g != 112 {
		t.Fatalf("global index %d", g)
	}
	if globalIndex(pt, -1) != -1 {
		t.Fatal("empty stays -1")
	}
}

// TestSpecKeyIgnoresRandomKey: specs that differ only in a random leaf's Philox key share a
// kernel (the key is read from the task descriptor), and the generated PTX has no key in it.
func TestSpecKeyIgnoresRandomKey(t *testing.T) {
	spec := func(k0, k1 uint32) *Spec {
		return &Spec{Rank: 1, Reduce: RSum, Nodes: []Node{{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Normal, P0: 10, P1: 1, Key: [2]uint32{k0, k1}}}}}
	}
	a, b := spec(0x1234567, 0x7654321), spec(99, 98)
	if a.Key() != b.Key() {
		t.Fatalf("keys differ: %s %s", a.Key(), b.Key())
	}
	c := spec(99, 98)
	c.Nodes[0].Rand.P1 = 2
	if c.Key() == b.Key() {
		t.Fatal("a different distribution parameter must change the spec key")
	}
	lib, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	ptx, _, err := GeneratePTX(a, string(lib))
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"19088743", "124076833"} { // 0x1234567, 0x7654321
		if strings.Contains(ptx, k) {
			t.Errorf("the key %s is compiled into the PTX", k)
		}
	}
}
