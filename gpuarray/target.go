package gpuarray

import (
	"context"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Target describes where Compute with a set of ComputeOptions runs, for packages built on
// arrays (dataframe) that do part of their work outside the array engine and must say so.
type Target struct {
	// Backend is "cpu" (Inline, Threads), "gpu" (OnGPU, OnGPUs) or "scheduler" (On: a cluster
	// client or another Scheduler).
	Backend string
	// Threads is the CPU goroutines Threads asked for (0: one per core).
	Threads int
	// Context is the context Compute stops on (WithContext, else the running cell's).
	Context context.Context
	// Scheduler is the scheduler of On (a cluster client); nil for the other backends.
	Scheduler Scheduler
}

// TargetOf returns where Compute with opts (after the session defaults) would run, or the
// error Compute would return for them (a GPU that cannot be opened).
func TargetOf(opts ...ComputeOption) (Target, error) {
	cfg, err := configure(opts)
	if err != nil {
		return Target{}, err
	}
	t := Target{Backend: "scheduler", Context: cfg.ctx, Scheduler: cfg.sched}
	switch s := cfg.sched.(type) {
	case engine.Inline:
		t.Backend, t.Threads, t.Scheduler = "cpu", 1, nil
	case *engine.Threads:
		t.Backend, t.Threads, t.Scheduler = "cpu", s.N, nil
	case *gpuSched:
		t.Backend, t.Scheduler = "gpu", nil
	}
	return t, nil
}

// WrapValues returns an array over v itself (no copy: v must not change afterwards), of v's
// dtype unless WithDType says otherwise; for packages that build host data (dataframe's
// readers) and hand it to the engine.
func WrapValues(v dtype.Slice, opts ...ArrayOption) *Array {
	shape, chunks, dt, err := resolveDT("WrapValues", []int{v.Len()}, v.DType(), opts)
	if err != nil {
		return errArray(err)
	}
	if dt != v.DType() {
		v = dtype.Convert(v, dt)
	}
	return wrap(expr.NewData(v, shape, chunks))
}

// Values computes the array and returns a copy of its elements in its own dtype, row-major.
func (a *Array) Values(opts ...ComputeOption) (dtype.Slice, error) {
	if err := a.Err(); err != nil {
		return dtype.Slice{}, err
	}
	return a.values(a.DType(), opts)
}
