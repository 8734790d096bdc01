package gpuarray

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
)

// TestHeldReshapeReadNamed: a reshape of an array persisted on a GPU reads the array's host
// copy (the planner reads a reshape's operand whole, as values), and the GPU's Path says so;
// before, it said nothing while the values went down to the host and up again (the op table's
// reshape row on a persisted array, 6.6 s on an H100 against 16.7 ms regenerated). The same
// reduction of the array itself reads it in place and names no host read.
func TestHeldReshapeReadNamed(t *testing.T) {
	dev := &cuda.Device{Info: cuda.DeviceInfo{Index: 0}}
	x, gx := heldForPlanning(t, NewRandomState(3).StandardNormal(Shape(40, 30), Chunks(10, 30)), dev, false)
	_, host := planHeld(t, x.Reshape(20, 2, 30).Sum(1), x, gx, dev)
	if len(host) != 1 || !strings.Contains(host[0], "through a reshape to (20, 2, 30)") || !strings.Contains(host[0], "(40, 30) array held on gpu 0") {
		t.Fatalf("reshape of a held array: host steps %q", host)
	}
	stages, host := planHeld(t, x.Sum(1), x, gx, dev)
	if len(host) != 0 || len(stages) != 1 || stages[0].inPlace != 4 || stages[0].onHost {
		t.Fatalf("sum of the held array: stages %+v, host steps %q", stages, host)
	}
}
