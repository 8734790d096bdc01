package cuda

import (
	"context"
	"fmt"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// CallRunner passes one task's values (row-major, shape, in host memory) through a library
// call on device d and returns the result and its shape; operands are the values of the call's
// further operands (plan.Task.Operands: a solve's right-hand sides, a product's b), in host
// memory. Package cuda/cufft registers the Fourier transforms, cuda/devsort the sorts and
// cuda/blas the matrix functions and products (RegisterCalls) so that this package need not
// import them.
type CallRunner func(ctx context.Context, d *Device, c *plan.CallStep, vals dtype.Slice, shape []int, operands []dtype.Slice) (dtype.Slice, []int, error)

// DeviceCallRunner is a CallRunner whose values a fused kernel left on device d: ptr holds them
// as the fused kernel's words (EncodeWords: float64 elements, or for the sorts the integers'
// int64 bits; see DeviceReads) standing for values of dtype dt, row-major over shape. The
// runner reads ptr and leaves freeing it to the caller. Its further operands may be on d
// already (Operand.Dev).
type DeviceCallRunner func(ctx context.Context, d *Device, c *plan.CallStep, ptr driver.DevicePtr, dt dtype.DType, shape []int, operands []Operand) (dtype.Slice, []int, error)

// Operand is a call's further operand as a device runner gets it: its values in host memory
// (Host), or, for an operand of floats held on the GPU (plan.Task.OperandBlocks), N float64
// elements in d's memory at Dev, copied from where it is held for the call's tasks: the runner
// reads them and neither writes nor frees them.
type Operand struct {
	Host  dtype.Slice
	Dev   driver.DevicePtr
	N     int
	DType dtype.DType
}

// Len returns the operand's number of values.
func (o Operand) Len() int {
	if o.Dev != 0 {
		return o.N
	}
	return o.Host.Len()
}

// OnHost returns operands of host values.
func OnHost(ops []dtype.Slice) []Operand {
	out := make([]Operand, len(ops))
	for i, s := range ops {
		out[i] = Operand{Host: s, DType: s.DType()}
	}
	return out
}

// callLib is one registered library of calls.
type callLib struct {
	name     string // for Path ("solve on cuSOLVER"); "" says nothing
	run      CallRunner
	dev      DeviceCallRunner       // nil: the values always come from host memory
	ready    func() error           // whether the library can be used here (loads it)
	supports func(expr.CallFn) bool // which functions it runs on a GPU
	trip     HostTripFunc           // nil: dev reads every value it is given on the device
}

// HostTripFunc says why a library's device runner copies the fused values of call c (of dtype
// dt, a task's block of shape shape) to host memory and uploads them again, or "" when it
// reads them where the fused kernel left them. The runner must decide with the same function.
type HostTripFunc func(c *plan.CallStep, dt dtype.DType, shape []int) string

var (
	callMu   sync.RWMutex
	callLibs []callLib
)

// RegisterCalls installs a runner of library calls, the check that its library loads, and
// which functions it runs on a GPU. Libraries are asked in the order they registered.
func RegisterCalls(run CallRunner, ready func() error, supports func(expr.CallFn) bool) {
	RegisterDeviceCalls(run, nil, ready, supports)
}

// RegisterDeviceCalls is RegisterCalls for a library that can also read values a fused kernel
// left on the device (dev), which saves their round trip through host memory.
func RegisterDeviceCalls(run CallRunner, dev DeviceCallRunner, ready func() error, supports func(expr.CallFn) bool) {
	RegisterLibrary("", run, dev, ready, supports)
}

// RegisterLibrary is RegisterDeviceCalls for a library named for users: the Path of a GPU
// computation says which of its calls ran on it (CallLibrary).
func RegisterLibrary(name string, run CallRunner, dev DeviceCallRunner, ready func() error, supports func(expr.CallFn) bool) {
	callMu.Lock()
	defer callMu.Unlock()
	callLibs = append(callLibs, callLib{name: name, run: run, dev: dev, ready: ready, supports: supports})
}

// RegisterHostTrips installs the HostTripFunc of the library registered as name (its device
// runner's own rule), so that Path can name every trip through host memory (HostTrip).
func RegisterHostTrips(name string, trip HostTripFunc) {
	callMu.Lock()
	defer callMu.Unlock()
	for i := range callLibs {
		if callLibs[i].name == name {
			callLibs[i].trip = trip
		}
	}
}

// HostTrip says why runCalls sends the fused values of the tasks of a call (one kernel) to host
// memory and back up to the GPU before the library reads them, or "" when it gives them where
// the fused kernel left them (or the call reads its input from host memory, where it is
// anyway). Path names the trip (issue 20: no silent host step).
func HostTrip(tasks []*plan.Task) string {
	if len(tasks) == 0 || tasks[0].Kernel.Call == nil {
		return ""
	}
	k := tasks[0].Kernel
	call := k.Call
	if call.Fn == expr.FnBincount || call.Fn.Scans() {
		return ""
	}
	lib := callLibFor(call.Fn)
	if lib == nil {
		return ""
	}
	ek := k.Elementwise()
	if !(!ek.PlainInput() && !k.PlainInput()) && !gathers(tasks) && !plan.ReadsHeld(tasks) {
		return "" // the values are in host memory already
	}
	dt := ek.Instrs[ek.Result].DType
	switch {
	case lib.dev == nil:
		return fmt.Sprintf("%s reads its values from host memory", lib.name)
	case !DeviceReads(call.Fn, dt):
		return fmt.Sprintf("%s reads %v values from host memory", lib.name, dt)
	case lib.trip != nil:
		return lib.trip(call, dt, tasks[0].Shape)
	}
	return ""
}

// CallLibrary names what computes fn on a GPU (a registered library, or the generated counting
// kernel of bincounts), or "" when nothing registered it by name.
func CallLibrary(fn expr.CallFn) string {
	if fn == expr.FnBincount {
		return "a generated counting kernel"
	}
	if fn.Scans() {
		return "a generated scan kernel"
	}
	if l := callLibFor(fn); l != nil {
		return l.name
	}
	return ""
}

// callLibFor returns the registered library that runs fn, or nil.
func callLibFor(fn expr.CallFn) *callLib {
	callMu.RLock()
	defer callMu.RUnlock()
	for i := range callLibs {
		if callLibs[i].supports(fn) {
			l := callLibs[i]
			return &l
		}
	}
	return nil
}

// Runs returns nil when RunPlan runs kernel k on a GPU, or why it does not (then run it on the
// CPU, saying so): the fused kernel cannot express it, or its library call's library is
// missing.
func Runs(k *plan.Kernel) error {
	lib, err := lowers(k)
	if err != nil || lib == nil {
		return err
	}
	return lib.ready()
}

// Lowers is Runs without asking whether a call's library loads (which needs a driver): nil
// when k becomes GPU work (a fused kernel, a generated scan or count, a registered library's
// call), or why it runs on the host. Tests use it to check what the lowering decides.
func Lowers(k *plan.Kernel) error {
	_, err := lowers(k)
	return err
}

// ReadsHeld reports whether RunPlan runs k reading its input blocks where a GPU holds them
// (plan.Held, a persisted array's chunk read in place, 4-byte floats widened as they are
// read): a fused kernel; a bincount or a scan (their generated kernels read the fused values);
// a library call whose device runner reads the fused values (DeviceReads), which runCalls
// then computes on the device from the held block. Other calls read host copies, which the
// caller says (plan.Stage.HostReads).
func ReadsHeld(k *plan.Kernel) bool {
	lib, err := lowers(k)
	switch {
	case err != nil:
		return false
	case k.Call == nil, k.Call.Fn == expr.FnBincount, k.Call.Fn.Scans():
		return true
	case lib == nil || lib.dev == nil || !DeviceReads(k.Call.Fn, k.Instrs[k.Result].DType):
		return false
	}
	// A call that reads its input unchanged (PlainInput) reads a held block through the
	// fused copy of its elementwise part, which must lower too.
	_, _, err = Lower(k.Elementwise())
	return err == nil
}

// lowers returns nil when k lowers to GPU work, with the library that runs its call (nil for
// none or for a generated kernel), or why it does not.
func lowers(k *plan.Kernel) (*callLib, error) {
	if k.Call == nil {
		_, _, err := Lower(k)
		return nil, err
	}
	if !k.PlainInput() {
		if _, _, err := Lower(k.Elementwise()); err != nil {
			return nil, err
		}
	}
	if k.Call.Fn == expr.FnBincount {
		return nil, bincountRuns(k)
	}
	if k.Call.Fn.Scans() {
		return nil, scanRuns(k.Call.DType)
	}
	lib := callLibFor(k.Call.Fn)
	if lib == nil {
		return nil, fmt.Errorf("cuda: %v has no GPU implementation yet", k.Call.Fn)
	}
	return lib, nil
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
	if tasks[0].Kernel.Call.Fn == expr.FnBincount {
		return runBincounts(ctx, devs, tasks)
	}
	if tasks[0].Kernel.Call.Fn.Scans() {
		return runScans(ctx, devs, tasks)
	}
	ek := tasks[0].Kernel.Elementwise()
	sub := make([]*plan.Task, len(tasks))
	for i, t := range tasks {
		c := *t
		c.Kernel = ek
		sub[i] = &c
	}
	call := tasks[0].Kernel.Call
	lib := callLibFor(call.Fn)
	fused := !ek.PlainInput() && !tasks[0].Kernel.PlainInput()
	outs := make([]*plan.Output, len(tasks))
	err := eachDevice(devs, len(tasks), func(d *Device, lo, hi int) error {
		// A take's block is gathered on the device by a fused kernel too, and a block held on
		// the device (ReadsHeld) is read there by one, not through host memory.
		fused := fused || gathers(tasks[lo:hi]) || plan.ReadsHeld(tasks[lo:hi])
		if fused && lib.dev != nil && DeviceReads(call.Fn, ek.Instrs[ek.Result].DType) {
			return runDeviceCalls(ctx, d, lib, call, tasks[lo:hi], sub[lo:hi], outs[lo:hi])
		}
		var vals []*plan.Output
		if fused {
			var err error
			if vals, err = RunPlan(ctx, []*Device{d}, sub[lo:hi]); err != nil {
				return err
			}
		}
		for i := lo; i < hi; i++ {
			var in dtype.Slice
			if vals != nil {
				in = vals[i-lo].Data
			} else if v, ok := tasks[i].CallValues(); ok {
				in = v.Clone() // the call may overwrite it
			} else {
				return fmt.Errorf("cuda: %v of chunk %d: its input block is not in host memory", call.Fn, tasks[i].Index)
			}
			if heldOperand(tasks[i]) {
				return fmt.Errorf("cuda: %v of chunk %d: a further operand held on the GPU for a runner of host values (internal)", call.Fn, tasks[i].Index)
			}
			data, shape, err := lib.run(ctx, d, call, in, tasks[i].Shape, tasks[i].Operands())
			if err != nil {
				return fmt.Errorf("%v of chunk %d: %w", call.Fn, tasks[i].Index, err)
			}
			if vals != nil {
				vals[i-lo] = nil // let the fused values go while the next task runs
			}
			outs[i] = &plan.Output{Shape: shape, Data: data}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}

// DeviceReads reports whether a library's device runner reads the fused values of fn, of
// dtype dt, where the fused kernel left them: float64 words (floats and bools) for every
// library, integer words (the int64 value's bits) for the device sort, which narrows them
// itself (Device.NarrowInts), complex pairs for the transforms (cuFFT reads interleaved pairs
// of float64 words, which is how the fused kernel writes complex values). Other complex values,
// and integers for the other libraries (whose values the planner casts to float64 anyway),
// reach the library through host memory (HostTrip names it).
func DeviceReads(fn expr.CallFn, dt dtype.DType) bool {
	switch ptx.LaneOf(dt) {
	case ptx.LaneF:
		return true
	case ptx.LaneI:
		return fn.Sorts()
	case ptx.LaneC:
		return fn.Transform()
	}
	return false
}

// runDeviceCalls computes each task's fused values on d, left there, and passes them to the
// library's device runner: one task at a time, so that one block's values are held at once.
func runDeviceCalls(ctx context.Context, d *Device, lib *callLib, call *plan.CallStep, tasks, sub []*plan.Task, outs []*plan.Output) error {
	ek := sub[0].Kernel
	dt := ek.Instrs[ek.Result].DType
	if ops := tasks[0].Operands(); len(ops) > 0 && len(tasks) > 1 {
		t0 := time.Now()
		release, err := d.stageOperands(ctx, ops)
		if err != nil {
			return err
		}
		defer release()
		Trace("%v: %d operands copied to GPU %d once for %d tasks in %.4f s", call.Fn, len(ops), d.Info.Index, len(tasks), time.Since(t0).Seconds())
	}
	held, freeHeld, err := d.heldOperands(ctx, tasks)
	if err != nil {
		return fmt.Errorf("%v: %w", call.Fn, err)
	}
	defer freeHeld()
	for i, t := range sub {
		t0 := time.Now()
		ptrs, free, err := RunPlanKeep(ctx, d, []*plan.Task{t})
		if err != nil {
			return err
		}
		t1 := time.Now()
		data, shape, err := lib.dev(ctx, d, call, ptrs[0], dt, tasks[i].Shape, operandsOf(tasks[i], held))
		free()
		if err != nil {
			return fmt.Errorf("%v of chunk %d: %w", call.Fn, tasks[i].Index, err)
		}
		Trace("%v of chunk %d on GPU %d: fused values %.4f s, %s %.4f s", call.Fn, tasks[i].Index, d.Info.Index, t1.Sub(t0).Seconds(), lib.name, time.Since(t1).Seconds())
		outs[i] = &plan.Output{Shape: shape, Data: data}
	}
	return nil
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

// heldOperand reports whether one of t's further operands is held on a GPU.
func heldOperand(t *plan.Task) bool {
	for _, b := range t.OperandBlocks() {
		if b.Held != nil {
			return true
		}
	}
	return false
}

// heldOperands copies the further operands of tasks (one call stage's, which share them) that
// a GPU holds (plan.Task.OperandBlocks' Held: joins of exactly the box read) into buffers of
// float64 elements on d, 4-byte floats widened, once for the tasks; free gives them back.
func (d *Device) heldOperands(ctx context.Context, tasks []*plan.Task) (map[*plan.Held]driver.DevicePtr, func(), error) {
	out := map[*plan.Held]driver.DevicePtr{}
	free := func() {
		_ = d.Do(context.Background(), func() error {
			for _, p := range out {
				d.pool.Free(p)
			}
			return nil
		})
	}
	for _, t := range tasks {
		for _, b := range t.OperandBlocks() {
			if b.Held == nil {
				continue
			}
			if _, ok := out[b.Held]; ok {
				continue
			}
			if b.Held.Device != d.Info.Index {
				free()
				return nil, func() {}, fmt.Errorf("a further operand held on GPU %d read on GPU %d (internal)", b.Held.Device, d.Info.Index)
			}
			t0 := time.Now()
			unit := joinWords
			if b.Held.Narrow { // a float32 operand in 4-byte floats (addOperands reads floats only)
				unit = joinWiden
			}
			copies := joinCopies(&b, 1)
			n := expr.Size(b.Shape)
			err := d.Do(ctx, func() error {
				p, err := d.pool.Alloc(uint64(max(n, 1)) * 8)
				if err != nil {
					return err
				}
				out[b.Held] = p
				if err := d.joinInto(p, copies, unit); err != nil {
					return err
				}
				return d.stream.Synchronize()
			})
			if err != nil {
				free()
				return nil, func() {}, fmt.Errorf("copy a further operand of shape %s held on GPU %d: %w", expr.ShapeString(b.Shape), d.Info.Index, err)
			}
			Trace("a further operand of shape %s read where GPU %d holds it (%d pieces) in %.4f s", expr.ShapeString(b.Shape), d.Info.Index, len(copies), time.Since(t0).Seconds())
		}
	}
	return out, free, nil
}

// operandsOf returns t's further operands for a device runner: host values, or the copies of
// held ones that heldOperands made.
func operandsOf(t *plan.Task, held map[*plan.Held]driver.DevicePtr) []Operand {
	blocks := t.OperandBlocks()
	out := make([]Operand, len(blocks))
	for i, b := range blocks {
		if b.Held != nil {
			out[i] = Operand{Dev: held[b.Held], N: int(expr.Size(b.Shape)), DType: dtype.Float64}
			continue
		}
		out[i] = Operand{Host: b.Data, DType: b.Data.DType()}
	}
	return out
}

// HostValues returns the host values of operands, for a device runner that reads them there;
// an operand on the device is an error (such runners are not given one: ReadsHeld).
func HostValues(ops []Operand) ([]dtype.Slice, error) {
	out := make([]dtype.Slice, len(ops))
	for i, o := range ops {
		if o.Dev != 0 {
			return nil, fmt.Errorf("cuda: operand %d is on the device, and this library reads operands from host memory (internal)", i+1)
		}
		out[i] = o.Host
	}
	return out, nil
}
