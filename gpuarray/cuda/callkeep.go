package cuda

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Call outputs left on the device (issue 32). A call stage whose inputs are on a GPU writes its
// output into device memory there, as a fused kernel does, so that later fused kernels,
// reductions and calls read it in place; its values come to the host only when asked for.

// KeptCall is a call task's output left in device memory: Ptr, in the pool of the device that
// ran it, holds the output row-major over Shape, as the GPU keeps an array of the call's dtype
// (plan.CallStep.DType): in its own element size where Narrow (EncodeNarrow's layout, from an
// 8-byte aligned address), else in the fused kernel's words (EncodeWords). The caller owns Ptr
// and gives it back to that pool (Free on the device goroutine, FreeLater from any other).
type KeptCall struct {
	Ptr    driver.DevicePtr
	Shape  []int
	Narrow bool
	// Note is what Path adds about how the library ran the call ("" for nothing): a
	// transform's four steps, say.
	Note string
}

// KeepCallRunner is a DeviceCallRunner that leaves the call's output on d (KeptCall) instead
// of bringing it to the host. ptr holds the fused values (see DeviceCallRunner); the runner
// reads them and leaves freeing them to the caller. A runner returns an error wrapping
// ErrNotKept, before touching the device, for a call it does not keep.
type KeepCallRunner func(ctx context.Context, d *Device, c *plan.CallStep, ptr driver.DevicePtr, dt dtype.DType, shape []int, operands []Operand) (KeptCall, error)

// KeepRule says why a library's keep runner would not keep call c, whose fused values have
// dtype dt, or "" when it keeps it: the planning decision, made without a GPU.
type KeepRule func(c *plan.CallStep, dt dtype.DType) string

// RegisterKeep installs the keep runner of the library registered as name and the rule that
// says which of its calls it keeps.
func RegisterKeep(name string, keep KeepCallRunner, rule KeepRule) {
	callMu.Lock()
	defer callMu.Unlock()
	for i := range callLibs {
		if callLibs[i].name == name {
			callLibs[i].keep, callLibs[i].keepRule = keep, rule
		}
	}
}

// KeepsCall says why RunCallsKeep would not leave the outputs of call kernel k on the device,
// or "" when it does: a generated scan (cumulative sums and products), or a registered
// library's call that its keep rule takes, whose fused values the library reads on the
// device. It needs no GPU: tests of the planning decisions call it.
func KeepsCall(k *plan.Kernel) string {
	if k == nil || k.Call == nil {
		return "not a call"
	}
	c := k.Call
	if _, err := lowers(k); err != nil {
		return err.Error()
	}
	switch {
	case c.Fn.Scans():
		if c.Fn == expr.FnProd {
			return "a product along an axis gives one value per line (its totals are combined on the host)"
		}
		return ""
	case c.Fn == expr.FnBincount:
		return "bincount's per-chunk counts are summed on the host"
	}
	lib := callLibFor(c.Fn)
	if lib == nil || lib.keep == nil {
		return fmt.Sprintf("%v: its library has no runner that leaves the output on the device", c.Fn)
	}
	ek := k.Elementwise()
	dt := ek.Instrs[ek.Result].DType
	if lib.dev == nil || !DeviceReads(c.Fn, dt) {
		return fmt.Sprintf("%v reads %v values from host memory", c.Fn, dt)
	}
	if !k.PlainInput() || !ek.PlainInput() {
		if _, _, err := Lower(ek); err != nil {
			return err.Error()
		}
	}
	if lib.keepRule != nil {
		return lib.keepRule(c, dt)
	}
	return ""
}

// RunCallsKeep runs call tasks (one kernel, KeepsCall "") on d, each task's fused values
// computed on d and left there, then its call, whose output stays on d: outs[i] is tasks[i]'s.
// Tasks reading blocks held on another GPU are the caller's to place (they run where they are
// held). On an error the outputs made so far are freed.
func RunCallsKeep(ctx context.Context, d *Device, tasks []*plan.Task) (outs []KeptCall, err error) {
	if len(tasks) == 0 {
		return nil, nil
	}
	k := tasks[0].Kernel
	if why := KeepsCall(k); why != "" {
		return nil, fmt.Errorf("%w: %s", ErrNotKept, why)
	}
	defer func() {
		if err != nil {
			freeKept(d, outs)
			outs = nil
		}
	}()
	call := k.Call
	if call.Fn.Scans() {
		return d.scansKeep(ctx, call, tasks)
	}
	lib := callLibFor(call.Fn)
	ek := k.Elementwise()
	dt := ek.Instrs[ek.Result].DType
	held, freeHeld, err := d.heldOperands(ctx, tasks)
	if err != nil {
		return nil, fmt.Errorf("%v: %w", call.Fn, err)
	}
	defer freeHeld()
	for _, t := range tasks {
		t0 := time.Now()
		sub := *t
		sub.Kernel = ek
		ptrs, free, err := RunPlanKeep(ctx, d, []*plan.Task{&sub})
		if err != nil {
			return outs, err
		}
		t1 := time.Now()
		o, err := lib.keep(ctx, d, call, ptrs[0], dt, t.Shape, operandsOf(t, held))
		free()
		if err != nil {
			return outs, fmt.Errorf("%v of chunk %d: %w", call.Fn, t.Index, err)
		}
		Trace("%v of chunk %d on GPU %d: fused values %.4f s, %s %.4f s, output left on the device", call.Fn, t.Index, d.Info.Index, t1.Sub(t0).Seconds(), lib.name, time.Since(t1).Seconds())
		outs = append(outs, o)
	}
	return outs, nil
}

// scansKeep runs scan tasks on d: each task's values computed in the result's dtype by the
// fused kernel into an allocation of its own, scanned there in place, and left there.
func (d *Device) scansKeep(ctx context.Context, call *plan.CallStep, tasks []*plan.Task) ([]KeptCall, error) {
	ek := castResult(tasks[0].Kernel.Elementwise(), call.DType)
	var outs []KeptCall
	for _, t := range tasks {
		t0 := time.Now()
		sub := *t
		sub.Kernel = ek
		ptrs, allocs, err := RunPlanKeepOwned(ctx, d, []*plan.Task{&sub})
		if err != nil {
			return outs, err
		}
		if len(ptrs) != 1 || len(allocs) != 1 || ptrs[0] != allocs[0] {
			freeKept(d, []KeptCall{{Ptr: allocs[0]}})
			return outs, fmt.Errorf("%v of chunk %d: the fused values are not one allocation (internal)", call.Fn, t.Index)
		}
		err = d.Do(ctx, func() error { return d.scanInPlace(call, ptrs[0], t.Shape) })
		if err != nil {
			freeKept(d, []KeptCall{{Ptr: allocs[0]}})
			return outs, fmt.Errorf("%v of chunk %d: %w", call.Fn, t.Index, err)
		}
		Trace("%v of chunk %d on GPU %d: fused values and scan %.4f s, output left on the device", call.Fn, t.Index, d.Info.Index, time.Since(t0).Seconds())
		outs = append(outs, KeptCall{Ptr: ptrs[0], Shape: call.OutShape(t.Shape)})
	}
	return outs, nil
}

// freeKept gives outs' allocations back to d's pool.
func freeKept(d *Device, outs []KeptCall) {
	if len(outs) == 0 {
		return
	}
	_ = d.Do(context.Background(), func() error {
		for _, o := range outs {
			d.pool.Free(o.Ptr)
		}
		return nil
	})
}

// ScaleWords multiplies n values at p in d's memory by scale, in place, as Go multiplies them on
// the host: float64 words (x *= scale), or with complex pairs of them (x *= complex(scale, 0),
// whose real part is re*scale - im*0 and imaginary part re*0 + im*scale, rounded after each
// operation). Call it on the device goroutine; it returns once the device has done it.
func (d *Device) ScaleWords(p driver.DevicePtr, n int64, scale float64, complexPairs bool) error {
	if n == 0 || scale == 1 {
		return nil
	}
	name := "gpn_scale_words"
	if complexPairs {
		name = "gpn_scale_pairs"
	}
	f, err := d.generated(name, func() (string, error) { return ptx.ScalePTX(d.lib.Version(), d.lib.Target(), name, complexPairs), nil })
	if err != nil {
		return err
	}
	if err := d.launchWords(f, name, gridBlocks(n), uint64(p), uint64(n), math.Float64bits(scale)); err != nil {
		return err
	}
	return d.stream.Synchronize()
}
