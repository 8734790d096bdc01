package gpuarray

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
)

// TestTakeGathersPlanning checks which takes a GPU compute gathers on the device (takeGathers:
// no host gather planned for them) and why the others are not: a persisted float64 or int64
// vector by int64 indices computed in the graph or held, yes; narrow or 2-d operands, float
// indices (cast first), host data, no. On a CPU scheduler resolveTakes leaves the graph alone.
func TestTakeGathersPlanning(t *testing.T) {
	dev := &cuda.Device{Info: cuda.DeviceInfo{Index: 0}}
	v, _ := heldForPlanning(t, NewRandomState(3).StandardNormal(Shape(1000), Chunks(250)), dev, false)
	k, _ := heldForPlanning(t, NewRandomState(4).Integers(0, 1000, Shape(1000), Chunks(250), WithDType(Int64)), dev, false)
	computed := v.Mul(1000).Sin().Abs().Mul(999).AsType(Int64)
	host := FromSliceInt64([]int64{3, 1, 2})
	for _, c := range []struct {
		name string
		r    *Array
		why  string // "" where it gathers on the device
	}{
		{"float64 by computed indices", v.Take(computed), ""},
		{"int64 by held indices", k.Take(k), ""},
		{"float64 by an argsort", v.Take(Argsort(v, 0)), ""},
		{"computed operand", v.Mul(2).Take(k), ""},
		{"int32 operand", v.AsType(Int32).Take(k), "a int32 operand"},
		{"2-d operand", v.Reshape(10, 100).Take(host, 0), "operand of shape (10, 100)"},
		{"host indices", v.Take(host), "in host memory"},
		{"host operand", FromSlice([]float64{1, 2, 3, 4}).Take(host), "in host memory"},
	} {
		why := takeGathers(c.r.n)
		if (c.why == "") != (why == "") || !strings.Contains(why, c.why) {
			t.Errorf("%s: %q, want %q", c.name, why, c.why)
		}
	}
	r := v.Take(computed)
	cfg, err := configure([]ComputeOption{Threads(1)})
	if err != nil {
		t.Fatal(err)
	}
	if n, err := resolveTakes(cfg, r.n); err != nil || n != r.n {
		t.Fatalf("resolveTakes on the CPU changed the graph (%v)", err)
	}
}

// TestBincountMaxWhereHeld checks where Bincount computes its length (x's maximum) when
// no minlength is given: on the GPUs that hold what x reads (heldGPUs), not on the session's
// default scheduler; nowhere in particular for host data.
func TestBincountMaxWhereHeld(t *testing.T) {
	dev := &cuda.Device{Info: cuda.DeviceInfo{Index: 2}}
	k, _ := heldForPlanning(t, NewRandomState(4).Integers(0, 1000, Shape(1000), Chunks(250), WithDType(Int64)), dev, false)
	if got := heldGPUs(k.Mul(int64(2)).n); len(got) != 1 || got[0] != 2 {
		t.Errorf("held on gpu 2: %v", got)
	}
	if got := heldGPUs(FromSliceInt64([]int64{1, 2}).n); len(got) != 0 {
		t.Errorf("host data: %v", got)
	}
}
