package cuda

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// CallRunner passes one task's values (row-major, shape, in host memory) through a library
// call on device d and returns the result and its shape; operands are the values of the call's
// further operands (plan.Task.Operands), in host memory. Packages cuda/cufft (the Fourier
// transforms) and cuda/blas (the matrix functions, cuSOLVER) register theirs (RegisterCalls)
// so that this package need not import them.
type CallRunner func(ctx context.Context, d *Device, c *plan.CallStep, vals dtype.Slice, shape []int, operands []dtype.Slice) (dtype.Slice, []int, error)

// DeviceCallRunner is a CallRunner for one task's values already in d's memory (float64,
// row-major, as RunPlanKeep leaves them): a library that has one reads the fused values where
// they were computed, without a round trip through the host. It may overwrite the values.
type DeviceCallRunner func(ctx context.Context, d *Device, c *plan.CallStep, vals driver.DevicePtr, shape []int, operands []dtype.Slice) (dtype.Slice, []int, error)

// callLib is one registered library: its runner, the check that it loads, and which
// functions it computes on a GPU.
type callLib struct {
	name     string
	run      CallRunner
	ready    func() error
	supports func(expr.CallFn) bool
	dev      DeviceCallRunner // nil: values go through the host
}

var (
	callMu   sync.RWMutex
	callLibs []callLib
)

// RegisterCalls installs a runner of library calls under the library's name, the check that its library loads (loading
// it), and which functions it runs on a GPU. Several libraries may register; each function
// goes to the first that supports it.
func RegisterCalls(name string, run CallRunner, ready func() error, supports func(expr.CallFn) bool) {
	callMu.Lock()
	defer callMu.Unlock()
	callLibs = append(callLibs, callLib{name: name, run: run, ready: ready, supports: supports})
}

// callLibFor returns the registered library that computes fn on a GPU.
func callLibFor(fn expr.CallFn) (callLib, bool) {
	callMu.RLock()
	defer callMu.RUnlock()
	for _, l := range callLibs {
		if l.supports(fn) {
			return l, true
		}
	}
	return callLib{}, false
}

// RegisterDeviceCalls gives the library registered under name a runner for values on the
// device.
func RegisterDeviceCalls(name string, run DeviceCallRunner) {
	callMu.Lock()
	defer callMu.Unlock()
	for i := range callLibs {
		if callLibs[i].name == name {
			callLibs[i].dev = run
		}
	}
}

// CallLibrary names the library that computes fn on a GPU, or "" when none registered it.
func CallLibrary(fn expr.CallFn) string {
	l, _ := callLibFor(fn)
	return l.name
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
	lib, ok := callLibFor(k.Call.Fn)
	if !ok {
		return fmt.Errorf("cuda: %v has no GPU implementation yet", k.Call.Fn)
	}
	return lib.ready()
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
	lib, _ := callLibFor(call.Fn) // Runs found it
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
			fused := !ek.PlainInput() && !tasks[0].Kernel.PlainInput()
			if fused && lib.dev != nil && ek.Instrs[ek.Result].DType == dtype.Float64 && !gathers(tasks[lo:hi]) {
				// The fused values stay on the device for the call, one task at a time.
				for i := lo; i < hi; i++ {
					t0 := time.Now()
					ptrs, free, err := RunPlanKeep(ctx, d, sub[i:i+1])
					if err != nil {
						errs[di] = err
						return
					}
					t1 := time.Now()
					data, shape, err := lib.dev(ctx, d, call, ptrs[0], tasks[i].Shape, tasks[i].Operands())
					free()
					Trace("%v of chunk %d on GPU %d: fused values %.4f s, %s %.4f s", call.Fn, tasks[i].Index, d.Info.Index, t1.Sub(t0).Seconds(), lib.name, time.Since(t1).Seconds())
					if err != nil {
						errs[di] = fmt.Errorf("%v of chunk %d: %w", call.Fn, tasks[i].Index, err)
						return
					}
					outs[i] = &plan.Output{Shape: shape, Data: data}
				}
				return
			}
			var vals []*plan.Output
			// A take's block is gathered on the device by a fused kernel too.
			if fused || gathers(tasks[lo:hi]) {
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
				data, shape, err := lib.run(ctx, d, call, in, tasks[i].Shape, tasks[i].Operands())
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
