package cluster

import (
	"bytes"
	"context"
	"encoding/gob"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// TestGPUWorkerHostFallbackInOutputs runs, as a GPU worker does, a batch whose kernel the GPU
// does not run (a search of complex values): the worker computes it on its CPU and says so in every
// output (reason and time), which is how the client learns of it (gpuarray reports it in the
// cell and in Path). It needs no GPU: the fallback is decided before any device is opened.
func TestGPUWorkerHostFallbackInOutputs(t *testing.T) {
	vals := make([]complex128, 60)
	for i := range vals {
		vals[i] = complex(float64(i)/20-1, 0.5)
	}
	x, err := expr.NewData(dtype.OfComplex128(vals), []int{6, 10}, [][]int{{3, 3}, {5, 5}})
	if err != nil {
		t.Fatal(err)
	}
	sorted, err := expr.NewData(dtype.OfComplex128(vals), []int{60}, [][]int{{60}}) // ascending
	if err != nil {
		t.Fatal(err)
	}
	y, err := expr.NewSearch(sorted, x, false)
	if err != nil {
		t.Fatal(err)
	}
	st, err := plan.Lower(0, y, map[*expr.Node]dtype.Slice{}, plan.Options{})
	if err != nil {
		t.Fatal(err)
	}
	why := cuda.Runs(st.Kernel)
	if why == nil {
		t.Fatal("the search of complex values runs on the GPU now: pick another kernel the GPU does not run")
	}
	var spec bytes.Buffer
	if err := gob.NewEncoder(&spec).Encode(st.Tasks); err != nil {
		t.Fatal(err)
	}
	for _, onGPU := range []bool{true, false} {
		v, err := executeChunks(context.Background(), spec.Bytes(), nil, onGPU)
		if err != nil {
			t.Fatal(err)
		}
		outs := v.([]*plan.Output)
		if len(outs) != len(st.Tasks) {
			t.Fatalf("%d outputs for %d tasks", len(outs), len(st.Tasks))
		}
		for i, o := range outs {
			if onGPU && (o.HostFallback != why.Error() || o.HostSeconds <= 0) {
				t.Fatalf("GPU worker, chunk %d: fallback %q (%g s), want %q", i, o.HostFallback, o.HostSeconds, why)
			}
			if !onGPU && o.HostFallback != "" {
				t.Fatalf("CPU worker, chunk %d: a CPU worker's chunks are no fallback: %q", i, o.HostFallback)
			}
		}
		got, err := st.Assemble(outs)
		if err != nil {
			t.Fatal(err)
		}
		for i := range vals {
			if g := got.Int64s()[i]; g != int64(i) {
				t.Fatalf("element %d: at %d of the sorted values, want %d", i, g, i)
			}
		}
	}
}
