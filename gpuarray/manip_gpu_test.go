package gpuarray

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// The NumPy property cases of manipulation and creation, computed by the GPU backend. Their
// values are multiples of 1/64 of modest size, so sums are exact and every result must equal
// NumPy's bit for bit.

func TestGPUManipMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, manipChecks(2, 20), OnGPU())
}

func TestGPUCreateMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, createChecks(2, 20), OnGPU())
}

func TestGPUIndexMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, indexChecks(2, 20), OnGPU())
}

func TestGPUPrintsLikeCPU(t *testing.T) {
	needGPU(t)
	x := Tile(Arange(0, 12, 1).Reshape(3, 4), 1, 2)
	g, err := x.Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	c, err := x.Compute(Inline())
	if err != nil {
		t.Fatal(err)
	}
	if g.String() != c.String() {
		t.Errorf("GPU:\n%s\nCPU:\n%s", g, c)
	}
}

// TestTakeStageIsGatheredOnTheHost: the stage that reads a take says its values were gathered
// on the host (what the GPU scheduler reports in Path); a stage without one does not. With
// Options.LateGather its blocks are left for the executor, and the CPU executor's gather
// (LoadInputs) gives the same values.
func TestTakeStageIsGatheredOnTheHost(t *testing.T) {
	x := Arange(0, 12, 1).Reshape(3, 4)
	y := Take(x, FromSliceInt64([]int64{2, 0}), 0).Add(1)
	var got [2][]float64
	for k, devGather := range []bool{false, true} {
		done := map[*expr.Node]dtype.Slice{}
		order := plan.Order(y.n)
		for id, n := range order {
			st, err := plan.Lower(id, n, done, plan.Options{LateGather: devGather})
			if err != nil {
				t.Fatal(err)
			}
			last := id == len(order)-1
			if st.Gathered != (last && !devGather) {
				t.Errorf("LateGather %v: stage %d of %d (%v): Gathered %v", devGather, id, len(order), n.Kind, st.Gathered)
			}
			for _, task := range st.Tasks {
				for _, b := range task.Inputs {
					if (b.Gather != nil) != (last && devGather) || (b.Gather != nil && !b.Data.IsNil()) {
						t.Errorf("LateGather %v: stage %d: a block with Gather %v and %d values", devGather, id, b.Gather != nil, b.Data.Len())
					}
				}
			}
			outs := make([]*plan.Output, len(st.Tasks))
			for i, task := range st.Tasks {
				if outs[i], err = cpu.Execute(context.Background(), task); err != nil {
					t.Fatal(err)
				}
			}
			if done[n], err = st.Assemble(outs); err != nil {
				t.Fatal(err)
			}
		}
		got[k] = done[y.n].ToFloat64()
	}
	if want := []float64{9, 10, 11, 12, 1, 2, 3, 4}; fmt.Sprint(got[0]) != fmt.Sprint(want) || fmt.Sprint(got[1]) != fmt.Sprint(want) {
		t.Errorf("take gathered on the host %v, by the executor %v; want %v", got[0], got[1], want)
	}
}

// TestGPUTakeGathersOnTheDevice: with OnGPU, takes, takes along an axis, integer indices and
// masks are gathered on the device (Path names no host gather) and equal the CPU's bit for
// bit, for float64 and float32 operands and random chunkings (with exact work around them:
// the GPU's sums add in another order).
func TestGPUTakeGathersOnTheDevice(t *testing.T) {
	needGPU(t)
	y := Take(Arange(0, 12, 1).Reshape(3, 4), FromSliceInt64([]int64{2, 0}), 0).Add(1)
	c, err := y.Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Path(); strings.Contains(p, "host") {
		t.Errorf("Path %q names a host step", p)
	}
	v, err := c.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{9, 10, 11, 12, 1, 2, 3, 4}; fmt.Sprint(v) != fmt.Sprint(want) {
		t.Errorf("take: %v, want %v", v, want)
	}
	x := NewRandomState(7).Normal(0, 1, Shape(300, 50, 20), Chunks(70, 13, 20))
	x32 := x.AsType(Float32)
	idx := NewRandomState(8).Integers(-300, 300, Shape(1000), Chunks(333))
	along := NewRandomState(9).Integers(0, 50, Shape(300, 64, 20), Chunks(70, 30, 7))
	cases := map[string]*Array{
		"take axis 0":         x.Take(idx, 0).Mul(2),
		"take axis 1":         x.Take(Remainder(idx, 50), 1),
		"take axis 2 f32":     x32.Take(Remainder(idx, 20), 2).Add(1),
		"take along 1":        TakeAlongAxis(x, along, 1),
		"take along 1 f32":    TakeAlongAxis(x32, along, 1).Max(2),
		"indices":             x.Slice(All(), Indices(Remainder(idx, 50))),
		"mask":                x.Mask(x.Gt(1)).Mul(3),
		"mask leading":        x.Mask(x.Slice(All(), At(0), At(0)).Lt(0)).Min(1),
		"take of a reduction": x.Max(2).Take(Remainder(idx, 50), 1),
	}
	for name, e := range cases {
		g, err := e.Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if p := g.Path(); strings.Contains(p, "host gather") {
			t.Errorf("%s: Path %q names a host gather", name, p)
		}
		h, err := e.Compute(Threads(0))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		gv, _ := g.ToSlice()
		hv, _ := h.ToSlice()
		if len(gv) != len(hv) || len(gv) == 0 {
			t.Fatalf("%s: %d values on the GPU, %d on the CPU", name, len(gv), len(hv))
		}
		for i := range gv {
			if math.Float64bits(gv[i]) != math.Float64bits(hv[i]) {
				t.Errorf("%s: element %d: GPU %v, CPU %v", name, i, gv[i], hv[i])
				break
			}
		}
	}
	// Out of range indices stay a clear error.
	_, err = x.Take(FromSliceInt64([]int64{0, 300}), 0).Compute(OnGPU())
	if err == nil || !strings.Contains(err.Error(), "out of bounds") {
		t.Errorf("an index out of range: %v", err)
	}
}

// TestGPUTakeTiming times a take of 4e7 of 1e7 float64 values then a sum, on the GPU with the
// gather on the device and on the host (the path before), and checks both agree.
func TestGPUTakeTiming(t *testing.T) {
	needGPU(t)
	x := NewRandomState(3).Normal(0, 1, Shape(10_000_000), Chunks(1_000_000))
	xc, err := x.Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	idx, err := NewRandomState(4).Integers(0, 10_000_000, Shape(40_000_000), Chunks(4_000_000)).Compute()
	if err != nil {
		t.Fatal(err)
	}
	e := xc.Take(idx, 0).Mul(2).Sum()
	defer func(v bool) { deviceGather = v }(deviceGather)
	var sums [2]float64
	for rep := 0; rep < 2; rep++ {
		for k, dev := range []bool{true, false} {
			deviceGather = dev
			t0 := time.Now()
			s, err := e.Float64(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			sums[k] = s
			t.Logf("take of 4e7 of 1e7 float64, *2, sum: gather on the %s: %.3f s", map[bool]string{true: "device", false: "host"}[dev], time.Since(t0).Seconds())
		}
		if sums[0] != sums[1] {
			t.Errorf("device gather sum %v, host gather sum %v", sums[0], sums[1])
		}
	}
}
