package cuda

import (
	"context"
	"fmt"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// CallRunner passes one task's values (row-major, shape, in host memory) through a library
// call on device d and returns the result and its shape. Package cuda/cufft registers the
// Fourier transforms (RegisterCalls) so that this package need not import it.
type CallRunner func(ctx context.Context, d *Device, c *plan.CallStep, vals dtype.Slice, shape []int) (dtype.Slice, []int, error)

var (
	callMu       sync.RWMutex
	callRunner   CallRunner
	callReady    func() error           // whether the library can be used here (loads it)
	callSupports func(expr.CallFn) bool // which functions the runner computes on a GPU
)

// RegisterCalls installs the runner of library calls, the check that its library loads, and
// which functions it runs on a GPU.
func RegisterCalls(run CallRunner, ready func() error, supports func(expr.CallFn) bool) {
	callMu.Lock()
	defer callMu.Unlock()
	callRunner, callReady, callSupports = run, ready, supports
}

// Runs returns nil when RunPlan runs kernel k on a GPU, or why it does not (then run it on the
// CPU, saying so): the fused kernel cannot express it, or its library call's library is
// missing.
func Runs(k *plan.Kernel) error {
	if k.Call == nil {
		_, _, err := Lower(k)
		return err
	}
	if !k.PlainInput() {
		if _, _, err := Lower(k.Elementwise()); err != nil {
			return err
		}
	}
	callMu.RLock()
	run, ready, supports := callRunner, callReady, callSupports
	callMu.RUnlock()
	if run == nil || !supports(k.Call.Fn) {
		return fmt.Errorf("cuda: %v has no GPU implementation yet", k.Call.Fn)
	}
	return ready()
}

// runCalls runs tasks of a kernel with a library call: the fused values of every task on the
// GPUs (one fused kernel, as for elementwise work), then each task's call on the GPU that
// computed it (tasks dealt to devs in contiguous runs).
func runCalls(ctx context.Context, devs []*Device, tasks []*plan.Task) ([]*plan.Output, error) {
	if err := Runs(tasks[0].Kernel); err != nil {
		return nil, err
	}
	if len(devs) == 0 {
		return nil, fmt.Errorf("cuda: no device to run on")
	}
	ek := tasks[0].Kernel.Elementwise()
	sub := make([]*plan.Task, len(tasks))
	for i, t := range tasks {
		c := *t
		c.Kernel = ek
		sub[i] = &c
	}
	call := tasks[0].Kernel.Call
	outs := make([]*plan.Output, len(tasks))
	per := (len(tasks) + len(devs) - 1) / len(devs)
	errs := make([]error, len(devs))
	var wg sync.WaitGroup
	for di, d := range devs {
		lo, hi := di*per, min(len(tasks), (di+1)*per)
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			var vals []*plan.Output
			// A take's block is gathered on the device by a fused kernel too.
			if !ek.PlainInput() && !tasks[0].Kernel.PlainInput() || gathers(tasks[lo:hi]) {
				var err error
				if vals, err = RunPlan(ctx, []*Device{d}, sub[lo:hi]); err != nil {
					errs[di] = err
					return
				}
			}
			for i := lo; i < hi; i++ {
				var in dtype.Slice
				if vals != nil {
					in = vals[i-lo].Data
				} else if v, ok := tasks[i].CallValues(); ok {
					in = v.Clone() // the call may overwrite it
				} else {
					errs[di] = fmt.Errorf("cuda: %v of chunk %d: its input block is not in host memory", call.Fn, tasks[i].Index)
					return
				}
				data, shape, err := callRunner(ctx, d, call, in, tasks[i].Shape)
				if err != nil {
					errs[di] = fmt.Errorf("%v of chunk %d: %w", call.Fn, tasks[i].Index, err)
					return
				}
				if vals != nil {
					vals[i-lo] = nil // let the fused values go while the next task runs
				}
				outs[i] = &plan.Output{Shape: shape, Data: data}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	return outs, nil
}

// gathers reports whether a task reads a block that the device gathers (plan.Block.Gather).
func gathers(tasks []*plan.Task) bool {
	for _, t := range tasks {
		for _, b := range t.Inputs {
			if b.Gather != nil && b.Data.IsNil() {
				return true
			}
		}
	}
	return false
}
