package cuda

import (
	"context"
	"fmt"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"slices"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/io/source"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Lower turns a planned kernel into a Spec, with the leaf number of each leaf instruction
// (-1 for others). A reduction over some axes only becomes a partial reduction (Spec.Kept);
// lowerTask orders each task's axes kept first. It fails only for kernels no GPU kernel
// expresses, which callers then run on the host and say so.
func Lower(k *plan.Kernel) (*Spec, []int, error) {
	if k.Call != nil {
		return nil, nil, fmt.Errorf("cuda: a kernel with a library call (%v) runs through RunPlan, not one fused kernel", k.Call.Fn)
	}
	rank := len(k.Shape)
	// A 0-d space runs as a 1-d space of one element (lowerTask pads it).
	s := &Spec{Rank: max(rank, 1), Reduce: RNone}
	if k.Reduce != nil {
		if len(k.Reduce.Axes) < rank {
			s.Kept = rank - len(k.Reduce.Axes)
			// Innermost axis reduced, runs long enough for a warp: a warp per run.
			red := k.Reduced()
			n := int64(1)
			for a, r := range red {
				if r {
					n *= int64(k.Shape[a])
				}
			}
			s.Rows = red[rank-1] && n >= axesMinRow
			// Runs of a few elements: a thread per kept element walks its whole run.
			s.Short = !s.Rows && n <= axesMaxShort
		}
		switch k.Reduce.Red {
		case expr.Sum, expr.Mean:
			s.Reduce = RSum
		case expr.Min:
			s.Reduce = RMin
		case expr.Max:
			s.Reduce = RMax
		case expr.ArgMin:
			s.Reduce = RArgMin
		case expr.ArgMax:
			s.Reduce = RArgMax
		case expr.Var, expr.Std:
			s.Reduce = RWelford
		default:
			return nil, nil, fmt.Errorf("cuda: reduction %v not supported", k.Reduce.Red)
		}
	}
	if k.Result != len(k.Instrs)-1 {
		return nil, nil, fmt.Errorf("cuda: result %d is not the last of %d instructions", k.Result, len(k.Instrs))
	}
	leaves := make([]int, len(k.Instrs))
	nleaf := 0
	for i, in := range k.Instrs {
		leaves[i] = -1
		nd := Node{DType: in.DType}
		for a := 0; a < len(in.Args) && a < 3; a++ {
			nd.Args[a] = in.Args[a]
		}
		switch in.Code {
		case plan.Const:
			nd.Kind, nd.Value = NConst, in.Value
		case plan.Random:
			nd.Kind, nd.Rand, nd.Leaf = NRandom, in.Rand, nleaf
			for _, e := range s.Nodes {
				if e.Kind == NRandom && e.SameKey == 0 && e.Rand.Key == in.Rand.Key {
					nd.SameKey = e.Leaf + 1
					break
				}
			}
		case plan.Input:
			nd.Kind, nd.Leaf = NInput, nleaf
		case plan.Range:
			nd.Kind, nd.Leaf, nd.Value, nd.Step, nd.Stop, nd.Exact = NRange, nleaf, in.Start, in.Step, in.Stop, in.Exact
			nd.Last = expr.Size(in.Src) - 1 // a reshaped range keeps its source's linear index
		case plan.Unary:
			nd.Kind, nd.Op = NUnary, in.Op
		case plan.Binary:
			nd.Kind, nd.Op = NBinary, in.Op
		case plan.Where:
			nd.Kind = NWhere
		case plan.Cast:
			nd.Kind = NCast
		case plan.Search:
			if Words(in.Sorted) != 1 {
				return nil, nil, fmt.Errorf("cuda: a search of %v values", in.Sorted)
			}
			nd.Kind, nd.Leaf, nd.Sorted, nd.Right = NSearch, nleaf, in.Sorted, in.Right
		default:
			return nil, nil, fmt.Errorf("cuda: %v instructions are not fused on the GPU", in.Code)
		}
		if nd.Kind.IsLeaf() {
			leaves[i] = nleaf
			nleaf++
		}
		s.Nodes = append(s.Nodes, nd)
	}
	if a, b, ok := ptx.MirrorLeaves(k, s); ok {
		s.Mirror = []int{a, b}
		if mirrorStrip > 0 {
			s.Rank = 3 // Device.Run walks its tasks in strips (mirrorStrips)
		}
	} else {
		ptx.MarkTiles(s, k)
	}
	if err := s.Validate(); err != nil {
		return nil, nil, err
	}
	if err := dryRun(s); err != nil {
		return nil, nil, err
	}
	return s, leaves, nil
}

// dryRuns holds, by Spec.Key, what a dry run of the generator said of a spec (nil: it
// generates): a spec's PTX takes 0.1-0.3 ms to write, and Lower is asked of one kernel
// several times per compute (the held hook, Runs, RunPlan).
var dryRuns sync.Map

// dryRun runs the generator without the device library: what it cannot express (an op or a
// dtype with no GPU body) runs on the host executor, and the error says which.
func dryRun(s *Spec) error {
	key := s.Key()
	if v, ok := dryRuns.Load(key); ok {
		err, _ := v.(error)
		return err
	}
	_, _, err := ptx.Generate(s, ptx.DryRunLibrary())
	dryRuns.Store(key, err)
	return err
}

// hostGather reports whether lowerTask gathers block b, of dtype dt, on the host: complex
// values (the device gather copies one word per element, a complex value takes two).
func hostGather(b *plan.Block, dt dtype.DType) bool {
	return Words(dt) != 1
}

// HostGathers reports whether running st's tasks on a GPU gathers a take's block on the host
// (hostGather), which Path should say.
func HostGathers(st *plan.Stage) bool {
	for _, t := range st.Tasks {
		for _, in := range t.Kernel.Instrs {
			if in.Code != plan.Input || in.Slot < 0 || in.Slot >= len(t.Inputs) {
				continue
			}
			if b := &t.Inputs[in.Slot]; b.Gather != nil && b.Data.IsNil() && hostGather(b, in.DType) {
				return true
			}
		}
	}
	return false
}

// lowerTask builds the GPU task of a planned task: the chunk's dims, and per leaf the affine map
// from the chunk-local index to the source's linear index. cache (may be nil) keeps the
// converted operands of takes gathered on the device, shared by the tasks of a stage.
func lowerTask(t *plan.Task, leaves []int, nleaf int, cache gatherCache) (Task, error) {
	k := t.Kernel
	rank := len(k.Shape)
	gt := Task{Dims: []int64{1}, Maps: make([]Map, nleaf), Inputs: make([][]float64, nleaf)}
	if rank > 0 {
		gt.Dims = make([]int64, rank)
	}
	for d, n := range t.Shape {
		gt.Dims[d] = int64(n)
	}
	if rank == 2 {
		gt.MirrorBase = int64(t.Offset[0] - t.Offset[1]) // read by mirrored kernels of stored inputs
	}
	for i := range k.Instrs {
		leaf := leaves[i]
		if leaf < 0 {
			continue
		}
		in := &k.Instrs[i]
		var base int64
		var coef []int64
		if in.Code == plan.Search {
			if err := lowerSorted(t, in, leaf, nleaf, &gt, cache); err != nil {
				return Task{}, err
			}
			continue
		}
		if in.Code == plan.Input {
			if in.Slot < 0 || in.Slot >= len(t.Inputs) {
				return Task{}, fmt.Errorf("cuda: task %d lacks input slot %d", t.Index, in.Slot)
			}
			b := &t.Inputs[in.Slot]
			base, coef = in.LinearIn(b, rank)
			if b.Held != nil {
				if gt.Held == nil {
					gt.Held = make([]HeldInput, nleaf)
				}
				gt.Held[leaf] = heldInput(b, in.DType)
			} else if b.Gather != nil && b.Data.IsNil() && hostGather(b, in.DType) {
				// Found on the host, which HostGathers reports for Path.
				gt.Inputs[leaf] = EncodeWords(dtype.Convert(b.Gather.Box(b.Origin, b.Shape), in.DType))
			} else if b.Gather != nil && b.Data.IsNil() {
				if gt.Gathers == nil {
					gt.Gathers = make([]*Gather, nleaf)
				}
				gt.Gathers[leaf] = lowerGather(b, in.DType, cache)
			} else if b.Gather != nil && b.Data.IsNil() {
				return Task{}, fmt.Errorf("cuda: task %d: a take of %v values to gather on the device (it copies one word per element; internal)", t.Index, in.DType)
			} else if b.File != nil && source.Streams(b.File) && in.DType == dtype.Float64 {
				if gt.Files == nil {
					gt.Files = make([]*plan.Block, nleaf)
				}
				gt.Files[leaf] = b // read at upload, file to pinned buffer to device
			} else if b.File != nil {
				// Other layouts and dtypes: read and converted on the host, then copied like
				// any input.
				vals, err := plan.ReadBlock(b)
				if err != nil {
					return Task{}, fmt.Errorf("cuda: task %d: %w", t.Index, err)
				}
				gt.Inputs[leaf] = EncodeWords(dtype.Convert(vals, in.DType))
			} else {
				gt.Inputs[leaf] = EncodeWords(dtype.Convert(b.Data, in.DType))
			}
		} else {
			base, coef = in.Linear(rank)
		}
		// The kernel indexes from the chunk's corner: fold the chunk offset into the base.
		for d := 0; d < rank; d++ {
			base += coef[d] * int64(t.Offset[d])
		}
		if rank == 0 {
			coef = []int64{0}
		}
		gt.Maps[leaf] = Map{Off: base, Strides: coef}
	}
	if perm := keptFirst(k); perm != nil {
		dims := make([]int64, rank)
		for j, a := range perm {
			dims[j] = gt.Dims[a]
		}
		gt.Dims = dims
		for l := range gt.Maps {
			st := make([]int64, rank)
			for j, a := range perm {
				st[j] = gt.Maps[l].Strides[a]
			}
			gt.Maps[l].Strides = st
		}
	}
	return gt, nil
}

// lowerSorted gives search leaf leaf of gt the sorted array that instruction in reads whole:
// where a GPU holds it (read in place), or its values as the kernel's words, converted once per
// stage (cache). The leaf's map is not an index: its offset is the array's length, its strides
// are 0, so the kernel finds the length in the leaf's row base.
func lowerSorted(t *plan.Task, in *plan.Instr, leaf, nleaf int, gt *Task, cache gatherCache) error {
	if in.Slot < 0 || in.Slot >= len(t.Inputs) {
		return fmt.Errorf("cuda: task %d lacks input slot %d", t.Index, in.Slot)
	}
	b := &t.Inputs[in.Slot]
	n := expr.Size(b.Shape)
	switch {
	case b.Held != nil:
		if gt.Held == nil {
			gt.Held = make([]HeldInput, nleaf)
		}
		gt.Held[leaf] = heldInput(b, in.Sorted)
	case b.Data.IsNil() && n > 0:
		return fmt.Errorf("cuda: task %d: the sorted array of a search is not in memory (internal)", t.Index)
	default:
		key, keyed := keyOf(b.Data)
		words, ok := cache[key]
		if !ok || !keyed {
			words = EncodeWords(dtype.Convert(b.Data, in.Sorted))
			if cache != nil && keyed {
				cache[key] = words
			}
		}
		gt.Inputs[leaf] = words
	}
	gt.Maps[leaf] = Map{Off: n, Strides: make([]int64, max(len(t.Shape), 1))}
	return nil
}

// keptFirst returns, for a reduction over some axes only, the axes of the iteration space in
// the order a partial-reduction kernel walks them: the kept ones, then the reduced ones, each
// ascending (so row-major orders within each group stay those of the plan). It returns nil for
// other kernels.
func keptFirst(k *plan.Kernel) []int {
	if k.Reduce == nil || len(k.Reduce.Axes) >= len(k.Shape) {
		return nil
	}
	red := k.Reduced()
	var perm []int
	for _, want := range []bool{false, true} {
		for a, r := range red {
			if r == want {
				perm = append(perm, a)
			}
		}
	}
	return perm
}

// RunPlan runs planned chunk tasks that share one kernel on devs (one device: d.Run; several:
// RunOn) and returns their outputs in the planner's format, in task order.
func RunPlan(ctx context.Context, devs []*Device, tasks []*plan.Task) ([]*plan.Output, error) {
	if len(tasks) == 0 {
		return nil, nil
	}
	k := tasks[0].Kernel
	if k.Call != nil {
		return runCalls(ctx, devs, tasks)
	}
	s, leaves, err := Lower(k)
	if err != nil {
		return nil, err
	}
	gts := make([]Task, len(tasks))
	cache := gatherCache{}
	for i, t := range tasks {
		if t.Kernel != k && t.Kernel.Key() != k.Key() {
			return nil, fmt.Errorf("cuda: RunPlan needs tasks of one kernel")
		}
		if gts[i], err = lowerTask(t, leaves, s.Leaves(), cache); err != nil {
			return nil, err
		}
	}
	if s, err = heldOn(devs, s, gts); err != nil {
		return nil, err
	}
	res, err := RunOn(ctx, devs, s, gts, Options{})
	if err != nil {
		return nil, err
	}
	outs := make([]*plan.Output, len(tasks))
	for i, t := range tasks {
		outs[i] = toOutput(t, s, res, i)
	}
	return outs, nil
}

// RunPlanKeep runs elementwise plan tasks of one kernel on d and leaves each task's elements
// on the device (row-major over the task's shape) instead of downloading them. Call free
// when done with the pointers.
func RunPlanKeep(ctx context.Context, d *Device, tasks []*plan.Task) (ptrs []driver.DevicePtr, free func(), err error) {
	ptrs, allocs, err := RunPlanKeepOwned(ctx, d, tasks)
	if err != nil {
		return nil, nil, err
	}
	return ptrs, func() {
		_ = d.Do(context.Background(), func() error {
			for _, p := range allocs {
				d.pool.Free(p)
			}
			return nil
		})
	}, nil
}

// RunPlanKeepOwned is RunPlanKeep returning the allocations behind ptrs instead of a free
// function: the caller gives them back to d's pool, with Free on the device goroutine or
// FreeLater from any other (a garbage-collector cleanup must not wait for the device, whose
// goroutine may itself be waiting for cleanups to free memory).
func RunPlanKeepOwned(ctx context.Context, d *Device, tasks []*plan.Task) (ptrs, allocs []driver.DevicePtr, err error) {
	return runPlanKeep(ctx, d, tasks, false)
}

// RunPlanKeepNarrow is RunPlanKeepOwned for elementwise tasks of a result of a Narrow dtype
// that leaves each element in its own size (Spec.NarrowOut), each task's from an 8-byte
// aligned address: such an array persisted on the GPU in 1/8 to 1/2 of the memory, read by
// later kernels as Narrow inputs (plan.Held.Narrow).
func RunPlanKeepNarrow(ctx context.Context, d *Device, tasks []*plan.Task) (ptrs, allocs []driver.DevicePtr, err error) {
	return runPlanKeep(ctx, d, tasks, true)
}

// Narrow reports whether a GPU keeps an array of dtype dt in its own element size (see
// ptx.Narrow).
func Narrow(dt dtype.DType) bool { return ptx.Narrow(dt) }

// narrowAlign is the element count, a multiple of which starts each task's narrow output of
// dtype dt (Spec.NarrowOut) and each chunk a GPU keeps narrow: 8 bytes' worth, so every chunk
// starts 8-byte aligned.
func narrowAlign(dt dtype.DType) int64 { return int64(8 / dt.Size()) }

func runPlanKeep(ctx context.Context, d *Device, tasks []*plan.Task, narrow bool) (ptrs, allocs []driver.DevicePtr, err error) {
	if len(tasks) == 0 {
		return nil, nil, nil
	}
	k := tasks[0].Kernel
	s, leaves, err := Lower(k)
	if err != nil {
		return nil, nil, err
	}
	if narrow {
		if s.Reduce != RNone || !Narrow(s.Nodes[len(s.Nodes)-1].DType) {
			return nil, nil, fmt.Errorf("cuda: narrow results of a %v %v kernel (internal)", s.Nodes[len(s.Nodes)-1].DType, s.Reduce)
		}
		c := *s
		c.NarrowOut = true
		s = &c
	}
	gts := make([]Task, len(tasks))
	cache := gatherCache{}
	for i, t := range tasks {
		if t.Kernel != k && t.Kernel.Key() != k.Key() {
			return nil, nil, fmt.Errorf("cuda: RunPlanKeep needs tasks of one kernel")
		}
		if gts[i], err = lowerTask(t, leaves, s.Leaves(), cache); err != nil {
			return nil, nil, err
		}
	}
	if s, err = heldOn([]*Device{d}, s, gts); err != nil {
		return nil, nil, err
	}
	res, err := d.Run(ctx, s, gts, Options{Keep: true})
	if err != nil {
		return nil, nil, err
	}
	return res.Dev, res.kept, nil
}

// KeepsPartials reports why RunPlanKeepOwned cannot leave the values of the partial reduction
// that tasks (of one kernel) compute on the device, or nil when it can: a sum, min or max
// whose every kept element is reduced by one slice, so that its partial is its value (a
// reduction over axes that each lie in one chunk, short enough per element).
func KeepsPartials(tasks []*plan.Task) error {
	if len(tasks) == 0 {
		return fmt.Errorf("cuda: no tasks")
	}
	s, _, err := Lower(tasks[0].Kernel)
	if err != nil {
		return err
	}
	perm := keptFirst(tasks[0].Kernel)
	gts := make([]Task, len(tasks))
	for i, t := range tasks {
		if perm == nil || len(t.Shape) != len(perm) {
			return fmt.Errorf("cuda: KeepsPartials needs a reduction over some axes only")
		}
		gts[i].Dims = make([]int64, len(perm))
		for j, a := range perm {
			gts[i].Dims[j] = int64(t.Shape[a])
		}
	}
	return keepsPartials(s, gts)
}

func toOutput(t *plan.Task, s *Spec, res *Result, i int) *plan.Output {
	r := s.Reduce
	if res.Axes != nil {
		return axesOutput(t, s, &res.Axes[i])
	}
	if r == RNone {
		dt := t.Kernel.Instrs[t.Kernel.Result].DType
		return &plan.Output{Shape: append([]int(nil), t.Shape...), Data: DecodeWords(res.Out[i], dt)}
	}
	shape := make([]int, len(t.Shape))
	for d := range shape {
		shape[d] = 1
	}
	o := &plan.Output{Shape: shape}
	switch l := s.AccLane(); {
	case l == ptx.LaneI:
		o.Data = laneData(s, []int64{res.Ints[i]}, nil, nil)
		if res.Index != nil {
			o.Aux = [][]float64{{float64(globalIndex(t, res.Index[i]))}}
		}
	case l == ptx.LaneC:
		o.Data = laneData(s, nil, []float64{res.Values[i]}, []float64{res.Imag[i]})
	case r == RWelford:
		o.Data = dtype.OfFloat64([]float64{res.Count[i]})
		o.Aux = [][]float64{{res.Mean[i]}, {res.M2[i]}}
	case r == RArgMin, r == RArgMax:
		o.Data = dtype.OfFloat64([]float64{res.Values[i]})
		o.Aux = [][]float64{{float64(globalIndex(t, res.Index[i]))}}
	default:
		o.Data = dtype.OfFloat64([]float64{res.Values[i]})
	}
	return o
}

// globalIndex converts a row-major index within the task's region to one over the kernel's
// whole iteration space (-1 stays -1).
func globalIndex(t *plan.Task, local int64) int64 {
	if local < 0 {
		return -1
	}
	var g int64
	stride := int64(1)
	for d := len(t.Shape) - 1; d >= 0; d-- {
		n := int64(t.Shape[d])
		i := local % n
		local /= n
		g += (int64(t.Offset[d]) + i) * stride
		stride *= int64(t.Kernel.Shape[d])
	}
	return g
}

// narrowInputs returns s with Narrow set on each input leaf (and search's sorted array) that
// some task reads from an array held in its own element size (HeldInput.Narrow), and makes
// the other tasks' data of that leaf narrow too: host data (values of the leaf's dtype, so
// exact) move to InputsNarrow. s itself is not changed (Lower caches it); it is returned as
// is when no task reads narrow data.
func narrowInputs(s *Spec, gts []Task) (*Spec, error) {
	var out *Spec
	for i := range s.Nodes {
		nd := &s.Nodes[i]
		dt := nd.DType
		switch nd.Kind {
		case NInput:
		case NSearch: // the sorted array's leaf
			dt = nd.Sorted
		default:
			continue
		}
		l := nd.Leaf
		narrow := false
		for _, t := range gts {
			if l < len(t.Held) && t.Held[l].Ptr != 0 && t.Held[l].Narrow {
				narrow = true
				break
			}
		}
		if !narrow {
			continue
		}
		if !Narrow(dt) {
			return nil, fmt.Errorf("cuda: a %v input reads narrow elements held on the GPU (internal)", dt)
		}
		if out == nil {
			c := *s
			c.Nodes = slices.Clone(s.Nodes)
			out = &c
		}
		out.Nodes[i].Narrow = true
		for ti := range gts {
			t := &gts[ti]
			switch {
			case l < len(t.Held) && t.Held[l].Ptr != 0:
				if !t.Held[l].Narrow {
					return nil, fmt.Errorf("cuda: input leaf %d is held in %d-byte elements by one task and 8-byte words by another (internal)", l, dt.Size())
				}
			case l < len(t.Gathers) && t.Gathers[l] != nil, l < len(t.Files) && t.Files[l] != nil:
				return nil, fmt.Errorf("cuda: input leaf %d is held in %d-byte elements by one task and gathered or read from a file by another (internal)", l, dt.Size())
			case l < len(t.Inputs) && t.Inputs[l] != nil:
				// Values of dt in the kernel's words: narrowed exactly.
				v := DecodeWords(t.Inputs[l], dt).Bytes()
				if v == nil {
					v = []byte{} // no elements, but data
				}
				if t.InputsNarrow == nil {
					t.InputsNarrow = make([][]byte, len(t.Inputs))
				}
				t.InputsNarrow[l], t.Inputs[l] = v, nil
			}
		}
	}
	if out == nil {
		return s, nil
	}
	return out, nil
}

// heldOn checks that tasks reading arrays held on a GPU run on that GPU alone, and returns
// the spec to run them with: s, or s with the leaves that read elements held there in their
// own size narrow (narrowInputs, which also narrows the other tasks' host data of those leaves).
func heldOn(devs []*Device, s *Spec, gts []Task) (*Spec, error) {
	for _, t := range gts {
		for _, h := range t.Held {
			if h.Ptr != 0 && (len(devs) != 1 || devs[0].Info.Index != h.Device) {
				return nil, fmt.Errorf("cuda: a task reads an array held on GPU %d but runs on %d GPU(s) starting with %d", h.Device, len(devs), devs[0].Info.Index)
			}
		}
	}
	return narrowInputs(s, gts)
}
