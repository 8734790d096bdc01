package gpuarray

import (
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
)

// TestFirstElementOfHeldResultReadInPlace checks the plan of what `bench ops --on-device`
// reads back of a large result held on a GPU (its first element, a slice of each axis): one
// stage whose task reads a block of the held chunks where the GPU holds them, none of it from
// host memory, for a 2-d int64 result (argsort's) and a 1-d float64 one (sort(v)'s).
func TestFirstElementOfHeldResultReadInPlace(t *testing.T) {
	dev := &cuda.Device{Info: cuda.DeviceInfo{Index: 0}}
	for _, c := range []struct {
		name string
		x    *Array
	}{
		{"int64 80x80", NewRandomState(1).StandardNormal(Shape(80, 80), Chunks(20, 20)).Mul(1000).AsType(Int64)},
		{"float64 1000", NewRandomState(2).StandardNormal(Shape(1000), Chunks(250))},
	} {
		x, g := heldForPlanning(t, c.x, dev, false)
		idx := make([]Index, x.NDim())
		for i := range idx {
			idx[i] = Span(0, 1)
		}
		stages, host := planHeld(t, x.Slice(idx...), x, g, dev)
		if len(host) != 0 {
			t.Errorf("%s: host steps %q", c.name, host)
		}
		if len(stages) != 1 || stages[0].onHost || stages[0].inPlace == 0 {
			t.Fatalf("%s: stages reading the held result %+v, want one reading it in place", c.name, stages)
		}
	}
}
