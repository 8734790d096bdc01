package plan

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Order returns the nodes that must be materialized to compute root, dependencies first:
// the reductions it contains, the operands of reshapes that could not be pushed to the leaves
// (expr.NewReshape), joins that a task would read across two inputs (see pieces.go), then
// root itself (unless root is already data).
func Order(root *expr.Node) []*expr.Node { return OrderAll([]*expr.Node{root}) }

// OrderAll is Order for several roots computed in one pass: a node they share (or a root
// inside another) is materialized once.
func OrderAll(roots []*expr.Node) []*expr.Node {
	isRoot := map[*expr.Node]bool{}
	for _, r := range roots {
		isRoot[r] = true
	}
	var base []*expr.Node
	seen := map[*expr.Node]bool{}
	added := map[*expr.Node]bool{}
	push := func(n *expr.Node) {
		if !added[n] {
			added[n] = true
			base = append(base, n)
		}
	}
	var walk func(n *expr.Node)
	walk = func(n *expr.Node) {
		if seen[n] {
			return
		}
		seen[n] = true
		for _, a := range n.Args {
			walk(a)
		}
		if n.Kind == expr.KSearch && n.Args[0].Kind != expr.KData {
			push(n.Args[0]) // read whole by every task; the values searched for are fused
		}
		if n.Kind == expr.KReshape || n.Kind == expr.KTake || n.Kind == expr.KTakeAlong {
			for i, a := range n.Args {
				// A take of a file reads the taken rows itself (fileTake), not the whole file.
				if a.Kind != expr.KData && !(n.Kind == expr.KTake && i == 0 && a.Kind == expr.KFile) {
					push(a)
				}
			}
		}
		if n.Kind == expr.KCall {
			for _, a := range n.Args[1:] { // a call's further operands are read whole
				if a.Kind != expr.KData {
					push(a)
				}
			}
		}
		if n.OwnStage() || isRoot[n] && n.Kind != expr.KData {
			push(n)
		}
	}
	for _, r := range roots {
		walk(r)
	}
	// Joins a stage cannot read piece by piece are computed before it.
	var out []*expr.Node
	staged := map[*expr.Node]bool{}
	var add func(n *expr.Node)
	add = func(n *expr.Node) {
		for c := straddled(n, staged); c != nil; c = straddled(n, staged) {
			add(c)
		}
		out = append(out, n)
		staged[n] = true
	}
	for _, n := range base {
		add(n)
	}
	return out
}

// Options bound what a plan may hold.
type Options struct {
	// MemoryLimit is the most bytes one task may hold (see Task.Bytes); 0 means no limit.
	MemoryLimit int64
	// Held, when set, is asked for each box [lo, hi] (inclusive, per axis) that a task of
	// kernel k reads of a data node whose values a device holds (expr.Node.Buf): it returns a
	// block with Held set that covers the box, or false, and the values are then read on the
	// host.
	Held func(k *Kernel, n *expr.Node, lo, hi []int) (Block, bool)
	// HeldOperands asks Held for the box of a call's further operand that the call reads (all
	// of it, a product's panel of b) when a device holds it, for device runners that read it
	// there (see addOperands); without it such operands are read whole from host memory.
	HeldOperands bool
	// LateGather leaves the blocks of takes (Block.Gather) for the executor: a
	// GPU gathers takes on the device, the CPU executor gathers in LoadInputs,
	// inside the task (so on all cores). Without it they are gathered as the tasks are made,
	// on the host (for cluster workers, which would otherwise be sent the whole operand).
	LateGather bool
	// Kept maps nodes materialized by earlier stages whose values a device holds (a call's
	// output left on the GPU) to data nodes whose Buf holds them: tasks read such a node as
	// they read that data node (through Held, in place), never from host memory unless Held
	// refuses a block.
	Kept map[*expr.Node]*expr.Node
}

// Stage is one planned stage: a kernel and its tasks.
type Stage struct {
	Node   *expr.Node // the node the stage materializes
	Kernel *Kernel    // the first task's kernel; tasks that read other pieces of a join have their own
	Tasks  []*Task
	grid   [][]int // chunk grid of the iteration space
	// Gathered says that a take's or a mask's values were gathered on the host into
	// the tasks' blocks as they were made (gather.go): the one part of such a stage that no
	// device runs.
	Gathered bool
	// WholeOnHost says that an array a device holds, which every task reads whole (a search's
	// sorted array), was read into host memory for the tasks: no one chunk of it held it all.
	WholeOnHost bool
	// HostReads are the data nodes held off the host (Options.Held) that the tasks read
	// from host memory after all: the hook refused a block (it spans several chunks, or the
	// kernel does not read held blocks where they are). A GPU's Path names them.
	HostReads []*expr.Node
	// ReshapeReads are the reshapes of data nodes held off the host (Options.Held) whose
	// tasks read the array's host copy after all (see reshapedBlock). A GPU's Path names them.
	ReshapeReads []ReshapeRead
	// HostOperands are the data nodes held off the host that a call reads as further
	// operands (CallStep.Operands) from host memory: Options.HeldOperands was off, or the
	// hook refused them.
	HostOperands []*expr.Node
}

type lowerer struct {
	k      *Kernel
	done   map[*expr.Node]dtype.Slice
	kept   map[*expr.Node]*expr.Node // Options.Kept
	memo   map[string]int
	inputs []inputLeaf
	held   bool  // Options.Held is set
	off    []int // the region whose pieces of joins the kernel reads
	shp    []int
}

type inputLeaf struct {
	data  dtype.Slice
	shape []int
	m     []expr.AxisMap
	held  *expr.Node // a data node held on a device, read through Options.Held where it can
	// reshaped: node is a reshape of held, and the leaf reads it as a block of the reshape
	reshaped bool
	node     *expr.Node // the node read (Instr.Alias)
	// gather, for a take, says how data (the operand's values) gives the values of shape
	gather *Gather
	// whole: every task reads all of data (a search's sorted operand), not a box of it
	whole bool
	file  *expr.File // a file-backed node: tasks read their boxes themselves (file.go)
}

// Lower plans node n as stage number id. done holds the values (row-major) of nodes
// materialized by earlier stages; KData nodes carry their own. A stage that reads a join
// (expr.KConcat) gets one kernel per combination of pieces its tasks read (see pieces.go).
func Lower(id int, n *expr.Node, done map[*expr.Node]dtype.Slice, opt Options) (*Stage, error) {
	iter := n
	var red *Reduction
	var call *CallStep
	switch n.Kind {
	case expr.KReduce:
		iter = n.Args[0]
		red = &Reduction{Red: n.Red, Axes: slices.Clone(n.Axes)}
	case expr.KCall:
		iter = n.Args[0]
		call = &CallStep{Call: *n.Call, DType: n.DType}
	}
	st := &Stage{Node: n, grid: iter.Chunks}
	// Nodes a device holds (Options.Kept) end the walks for joins as computed nodes do.
	jd := done
	if len(opt.Kept) > 0 {
		jd = maps.Clone(done)
		for k := range opt.Kept {
			jd[k] = dtype.Slice{}
		}
	}
	joins := hasJoin(iter, jd)
	kernels := map[string]*lowerer{}
	pick := func(off, shp []int) (*lowerer, error) {
		key := ""
		if joins {
			var c *expr.Node
			if key, c = pieceKey(iter, jd, off, shp); c != nil {
				return nil, fmt.Errorf("plan: a chunk at %v of shape %s reads across the pieces of a concatenation of shape %s", off, expr.ShapeString(shp), expr.ShapeString(c.Shape))
			}
		}
		if l, ok := kernels[key]; ok {
			return l, nil
		}
		l, err := lowerKernel(iter, red, call, done, opt, off, shp)
		if err != nil {
			return nil, err
		}
		kernels[key] = l
		if st.Kernel == nil {
			st.Kernel = l.k
		}
		return l, nil
	}
	if n.Kind == expr.KCall && len(n.Args) > 1 {
		call.Operands = len(n.Args) - 1
	}
	if err := st.makeTasks(id, pick, opt); err != nil {
		return nil, err
	}
	if n.Kind == expr.KCall && len(n.Args) > 1 {
		if err := st.addOperands(n.Args[1:], done, opt); err != nil {
			return nil, err
		}
		// The operands count towards a task's memory too (a product's panel of b).
		for _, task := range st.Tasks {
			if b := task.Bytes(); opt.MemoryLimit > 0 && b > opt.MemoryLimit {
				return nil, fmt.Errorf("a task of chunk shape %s (array %s) needs %d bytes with the %v's further operands%s, more than the memory limit of %d bytes; use smaller chunks",
					expr.ShapeString(task.Shape), expr.ShapeString(iter.Shape), b, n.Call.Fn, joinNote(task), opt.MemoryLimit)
			}
		}
	}
	return st, nil
}

// joinNote says how many of a task's bytes (Task.Bytes) go to joining blocks that span
// several chunks into one buffer, for the memory limit's error; "" when none do.
func joinNote(t *Task) string {
	var n int64
	for i := range t.Inputs {
		n += t.JoinBytes(i)
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf(" (%d of them to join blocks that span several chunks into one buffer)", n)
}

// lowerKernel lowers iter into a kernel; the region (off, shp) picks the pieces of joins.
func lowerKernel(iter *expr.Node, red *Reduction, call *CallStep, done map[*expr.Node]dtype.Slice, opt Options, off, shp []int) (*lowerer, error) {
	k := &Kernel{Shape: slices.Clone(iter.Shape), Reduce: red, Call: call}
	l := &lowerer{k: k, done: done, kept: opt.Kept, memo: map[string]int{}, held: opt.Held != nil, off: off, shp: shp}
	res, err := l.emit(iter, nil)
	if err != nil {
		return nil, err
	}
	dt := k.Instrs[res].DType
	if red != nil && red.Red != expr.ArgMin && red.Red != expr.ArgMax {
		// Sums of integers accumulate in int64 or uint64, means of integers in float64: the
		// reduced value has the result's dtype (Min and Max keep theirs).
		rdt, err := expr.ReduceDType(red.Red, dt)
		if err != nil {
			return nil, fmt.Errorf("plan: %w", err)
		}
		dt = rdt
	}
	if res != len(k.Instrs)-1 || dt != k.Instrs[res].DType {
		// Make the result the last instruction, as the IR promises.
		k.Instrs = append(k.Instrs, Instr{Code: Cast, DType: dt, Args: []int{res}})
		res = len(k.Instrs) - 1
	}
	switch {
	case call != nil && call.Fn.Scans() && k.Instrs[res].DType != call.DType:
		// Scans read their values in the result's dtype: integers stay exact past 2^53.
		k.Instrs = append(k.Instrs, Instr{Code: Cast, DType: call.DType, Args: []int{res}})
		res = len(k.Instrs) - 1
	case call != nil && !call.Fn.Sorts() && !call.Fn.Scans():
		res = k.castForCall(res)
	}
	k.Result = res
	return l, nil
}

func mapKey(m []expr.AxisMap) string {
	var b strings.Builder
	for _, a := range m {
		b.WriteString(strconv.Itoa(a.Axis))
		b.WriteByte(',')
		b.WriteString(strconv.Itoa(a.Off))
		b.WriteByte(',')
		b.WriteString(strconv.Itoa(a.Step))
		b.WriteByte(';')
	}
	return b.String()
}

// identity is the map of a node read at the iteration index itself.
func identity(rank int) []expr.AxisMap {
	m := make([]expr.AxisMap, rank)
	for d := range m {
		m[d] = expr.AxisMap{Axis: d, Step: 1}
	}
	return m
}

// compose returns the map of a view's input given the map m through which the view is read.
func compose(view, m []expr.AxisMap) []expr.AxisMap {
	out := make([]expr.AxisMap, len(view))
	for d, v := range view {
		if v.Axis < 0 {
			out[d] = v
			continue
		}
		o := m[v.Axis]
		if o.Axis < 0 {
			out[d] = expr.AxisMap{Axis: -1, Off: v.Off + v.Step*o.Off}
		} else {
			out[d] = expr.AxisMap{Axis: o.Axis, Off: v.Off + v.Step*o.Off, Step: v.Step * o.Step}
		}
	}
	return out
}

func (l *lowerer) add(in Instr) int {
	l.k.Instrs = append(l.k.Instrs, in)
	return len(l.k.Instrs) - 1
}

// emit lowers n read through map m (nil: identity) and returns its instruction.
func (l *lowerer) emit(n *expr.Node, m []expr.AxisMap) (int, error) {
	if m == nil {
		m = identity(len(n.Shape))
	}
	key := fmt.Sprintf("%p|%s", n, mapKey(m))
	if i, ok := l.memo[key]; ok {
		return i, nil
	}
	i, err := l.emitNew(n, m)
	if err != nil {
		return 0, err
	}
	l.memo[key] = i
	return i, nil
}

func (l *lowerer) emitNew(n *expr.Node, m []expr.AxisMap) (int, error) {
	if vals, ok := l.done[n]; ok {
		return l.input(vals, n, m), nil
	}
	if d, ok := l.kept[n]; ok {
		return l.emitNew(d, m)
	}
	switch n.Kind {
	case expr.KConst:
		return l.add(Instr{Code: Const, DType: n.DType, Value: n.Value}), nil
	case expr.KRandom:
		return l.add(Instr{Code: Random, DType: n.DType, Rand: n.Rand, Src: slices.Clone(n.Shape), Map: m}), nil
	case expr.KRange:
		return l.add(Instr{Code: Range, DType: n.DType, Start: n.Start, Step: n.Step, Stop: n.Stop, Exact: n.Exact, Src: slices.Clone(n.Shape), Map: m}), nil
	case expr.KData:
		if n.Buf != nil && l.held {
			slot := l.input(dtype.Slice{}, n, m)
			l.inputs[len(l.inputs)-1].held = n
			return slot, nil
		}
		vals, err := n.Values()
		if err != nil {
			return 0, err
		}
		return l.input(vals, n, m), nil
	case expr.KFile:
		return l.fileInput(n, m), nil
	case expr.KView:
		return l.emit(n.Args[0], compose(n.Map, m))
	case expr.KReshape:
		a := n.Args[0]
		if d, ok := l.kept[a]; ok {
			a = d
		}
		vals, ok := l.done[a]
		if !ok && a.Kind == expr.KData && a.Buf != nil && l.held {
			// Held off the host: read in place where a task's block of the reshape is a box
			// of the array (reshapedBlock), else from its host copy, once per stage.
			slot := l.input(dtype.Slice{}, n, m)
			l.inputs[len(l.inputs)-1].held, l.inputs[len(l.inputs)-1].reshaped = a, true
			return slot, nil
		}
		if !ok {
			if a.Kind != expr.KData {
				return 0, fmt.Errorf("plan: the operand of a reshape to %s was not computed before its use", expr.ShapeString(n.Shape))
			}
			var err error
			if vals, err = a.Values(); err != nil {
				return 0, err
			}
		}
		return l.input(vals, n, m), nil
	case expr.KTake, expr.KTakeAlong:
		return l.takeInput(n, m)
	case expr.KSearch:
		return l.search(n, m)
	case expr.KMask:
		return 0, fmt.Errorf("plan: a masked array of shape %s must be resolved (its mask computed) before it is planned", expr.ShapeString(n.Shape))
	case expr.KConcat:
		arg, start := piece(n, m, l.off, l.shp)
		pm := slices.Clone(m)
		pm[n.Axes[0]].Off -= start
		return l.emit(n.Args[arg], pm)
	case expr.KUnary, expr.KBinary, expr.KWhere, expr.KCast:
		args := make([]int, len(n.Args))
		for j, a := range n.Args {
			var err error
			if args[j], err = l.emit(a, m); err != nil {
				return 0, err
			}
		}
		code := map[expr.Kind]Code{expr.KUnary: Unary, expr.KBinary: Binary, expr.KWhere: Where, expr.KCast: Cast}[n.Kind]
		return l.add(Instr{Code: code, DType: n.DType, Op: n.Op, Args: args}), nil
	case expr.KCall:
		return 0, fmt.Errorf("plan: %v of shape %s was not computed before its use", n.Call.Fn, expr.ShapeString(n.Args[0].Shape))
	case expr.KReduce:
		return 0, fmt.Errorf("plan: reduction %v of shape %s was not computed before its use", n.Red, expr.ShapeString(n.Args[0].Shape))
	}
	return 0, fmt.Errorf("plan: unknown node kind %d", n.Kind)
}

func (l *lowerer) input(vals dtype.Slice, n *expr.Node, m []expr.AxisMap) int {
	slot := len(l.inputs)
	l.inputs = append(l.inputs, inputLeaf{data: vals, shape: n.Shape, m: m, node: n})
	alias := 0
	for i, in := range l.k.Instrs {
		if in.Code == Input && in.Slot < slot && l.inputs[in.Slot].node == n {
			alias = i + 1
			break
		}
	}
	return l.add(Instr{Code: Input, DType: n.DType, Slot: slot, Alias: alias, Src: slices.Clone(n.Shape), Map: m})
}

// makeTasks creates one task per chunk of the grid, in row-major chunk order; pick gives the
// kernel (and its inputs) of a chunk.
func (st *Stage) makeTasks(id int, pick func(off, shp []int) (*lowerer, error), opt Options) error {
	rank := len(st.grid)
	bnds := make([][]int, rank)
	for ax, cs := range st.grid {
		b := []int{0}
		for _, c := range cs {
			b = append(b, b[len(b)-1]+c)
		}
		bnds[ax] = b
	}
	total := expr.NumChunks(st.grid)
	idx := make([]int, rank)
	for t := 0; t < total; t++ {
		off := make([]int, rank)
		shp := make([]int, rank)
		for ax := range idx {
			off[ax] = bnds[ax][idx[ax]]
			shp[ax] = st.grid[ax][idx[ax]]
		}
		l, err := pick(off, shp)
		if err != nil {
			return err
		}
		inputs := l.inputs
		task := &Task{Stage: id, Index: t, Kernel: l.k, Offset: off, Shape: shp}
		for i := range inputs {
			in := &inputs[i]
			if in.whole {
				b, onHost, err := wholeBlock(in, l.k, opt)
				if err != nil {
					return err
				}
				st.WholeOnHost = st.WholeOnHost || onHost
				task.Inputs = append(task.Inputs, b)
				continue
			}
			if in.file != nil {
				task.Inputs = append(task.Inputs, fileBlock(*in, off, shp))
				continue
			}
			if in.held != nil {
				origin, shape := box(*in, off, shp)
				lo, hi := origin, make([]int, len(origin))
				for d := range hi {
					hi[d] = origin[d] + shape[d] - 1
				}
				if in.reshaped {
					b, ok, why := reshapedBlock(opt, l.k, *in, origin, shape)
					if ok {
						task.Inputs = append(task.Inputs, b)
						continue
					}
					if expr.Size(shape) > 0 && !slices.ContainsFunc(st.ReshapeReads, func(r ReshapeRead) bool { return r.Reshape == in.node }) {
						st.ReshapeReads = append(st.ReshapeReads, ReshapeRead{Reshape: in.node, Why: why})
					}
				} else if b, ok := opt.Held(l.k, in.held, lo, hi); ok && expr.Size(shape) > 0 {
					task.Inputs = append(task.Inputs, b)
					continue
				}
				if in.data.IsNil() { // read on the host after all, once per stage
					vals, err := in.held.Values()
					if err != nil {
						return err
					}
					in.data = vals
				}
				if !in.reshaped && !slices.Contains(st.HostReads, in.held) {
					st.HostReads = append(st.HostReads, in.held)
				}
			}
			if in.gather != nil {
				if opt.LateGather {
					task.Inputs = append(task.Inputs, gatherBlock(*in, off, shp))
					continue
				}
				task.Inputs = append(task.Inputs, cutGather(*in, off, shp))
				st.Gathered = true
				continue
			}
			task.Inputs = append(task.Inputs, cutBlock(*in, off, shp))
		}
		if b := task.Bytes(); opt.MemoryLimit > 0 && b > opt.MemoryLimit {
			return fmt.Errorf("a task of chunk shape %s (array %s) needs %d bytes%s, more than the memory limit of %d bytes; use smaller chunks",
				expr.ShapeString(shp), expr.ShapeString(l.k.Shape), b, joinNote(task), opt.MemoryLimit)
		}
		st.Tasks = append(st.Tasks, task)
		for ax := rank - 1; ax >= 0; ax-- {
			idx[ax]++
			if idx[ax] < len(st.grid[ax]) {
				break
			}
			idx[ax] = 0
		}
	}
	return nil
}

// box returns the box of an input that a region reads: its origin and shape.
func box(in inputLeaf, off, shp []int) (origin, shape []int) {
	r := len(in.shape)
	origin, shape = make([]int, r), make([]int, r)
	empty := expr.Size(shp) == 0
	for d, am := range in.m {
		lo, hi := am.Off, am.Off
		if am.Axis >= 0 && !empty {
			a := am.Off + am.Step*off[am.Axis]
			z := am.Off + am.Step*(off[am.Axis]+shp[am.Axis]-1)
			lo, hi = min(a, z), max(a, z)
		}
		origin[d] = lo
		shape[d] = hi - lo + 1
		if empty {
			shape[d] = 0
		}
	}
	return origin, shape
}

// cutBlock copies the box of an input that a region reads.
func cutBlock(in inputLeaf, off, shp []int) Block {
	r := len(in.shape)
	origin, shape := box(in, off, shp)
	b := Block{Origin: origin, Shape: shape}
	n := expr.Size(b.Shape)
	b.Data = dtype.Make(in.data.DType(), int(n))
	if n == 0 {
		return b
	}
	if r == 0 {
		dtype.Copy(b.Data, in.data)
		return b
	}
	// Copy row by row along the last axis.
	src := rowStrides(in.shape)
	inner := b.Shape[r-1]
	pos := make([]int, r)
	for o := int64(0); o < n; o += int64(inner) {
		s := 0
		for d := 0; d < r; d++ {
			s += (b.Origin[d] + pos[d]) * src[d]
		}
		dtype.Copy(b.Data.Slice(int(o), int(o)+inner), in.data.Slice(s, s+inner))
		for d := r - 2; d >= 0; d-- {
			pos[d]++
			if pos[d] < b.Shape[d] {
				break
			}
			pos[d] = 0
		}
	}
	return b
}

func rowStrides(shape []int) []int {
	s := make([]int, len(shape))
	st := 1
	for d := len(shape) - 1; d >= 0; d-- {
		s[d] = st
		st *= shape[d]
	}
	return s
}
