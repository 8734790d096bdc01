package gpuarray

import (
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Scheduler runs the tasks of one planned stage. The tasks are independent; Run returns
// outs[i] for tasks[i], calls done(1) as each task finishes, and stops early with an error
// when ctx is cancelled. Inline, Threads and OnGPU are Schedulers; a cluster client is one too.
type Scheduler interface {
	Run(ctx context.Context, tasks []*plan.Task, done func(n int)) ([]*plan.Output, error)
}

// ComputeOption configures Compute: a scheduler (Inline, Threads, OnGPU, OnGPUs, On), a
// context (WithContext), progress (WithProgress), a memory limit (MemoryLimit).
type ComputeOption func(*computeConfig)

type computeConfig struct {
	sched    Scheduler
	schedErr error
	ctx      context.Context
	progress func(done, total int)
	quiet    bool
	memLimit int64
	// toHost brings GPU results to the host (callers that read the values right away);
	// otherwise Compute on a GPU leaves array results there (see computeArrays).
	toHost bool
	// notes collects, for Path, the host fallbacks that schedulers other than the GPU's
	// report in their outputs (GPU cluster workers).
	notes *engine.HostNotes
	// kept maps the call stages of this computation whose outputs a GPU holds (runOrder,
	// keepCall) to data nodes holding them, which later stages read in place (plan.Options.Kept);
	// nil when the scheduler is no GPU's.
	kept map[*expr.Node]*expr.Node
	// stayRoots are the roots a GPU compute leaves on the device (gpuResults.stay): runOrder
	// keeps such a root's call output there too, where another root reads it.
	stayRoots map[*expr.Node]bool
}

// planOpts returns the planning options of cfg's scheduler, with the stages kept on the GPU.
func (cfg computeConfig) planOpts() plan.Options {
	o := planOptions(cfg.sched, cfg.memLimit)
	o.Kept = cfg.kept
	return o
}

// withKept returns cfg set to keep the outputs of call stages on the GPU (a GPU scheduler's
// only), and the function that frees them once the computation is done with them.
func withKept(cfg computeConfig) (computeConfig, func()) {
	if _, ok := cfg.sched.(*gpuSched); !ok {
		return cfg, func() {}
	}
	cfg.kept = map[*expr.Node]*expr.Node{}
	return cfg, func() {
		for _, d := range cfg.kept {
			if gc, ok := d.Buf.(*gpuChunks); ok {
				gc.release()
			}
		}
	}
}

// reportFallbacks reports the tasks of st that a GPU cluster worker ran on its CPU (their
// outputs say so): one warning in the cell with the chunks, the time and the reasons, and a
// note for Path, as a local GPU compute reports its host steps.
func reportFallbacks(cfg computeConfig, st *plan.Stage, outs []*plan.Output) {
	reportLibs(cfg, outs)
	reportHostReads(cfg, st, outs)
	n, secs := 0, 0.0
	var reasons []string
	for _, o := range outs {
		if o == nil || o.HostFallback == "" {
			continue
		}
		n++
		secs += o.HostSeconds
		if !slices.Contains(reasons, o.HostFallback) {
			reasons = append(reasons, o.HostFallback)
		}
	}
	if n == 0 {
		return
	}
	msg := fmt.Sprintf("host fallback: %d of %d chunks of the %s ran on the CPU of GPU cluster workers in %.3g s (%s)", n, len(outs), describeKernel(st.Kernel), secs, strings.Join(reasons, "; "))
	reportHost(cfg, msg)
}

// reportHostReads reports the tasks of st that read chunks kept on a GPU cluster worker's GPU
// through its host memory (their outputs say why, plan.Output.HostRead): one warning and a
// note for Path, as a local GPU names its host reads.
func reportHostReads(cfg computeConfig, st *plan.Stage, outs []*plan.Output) {
	n := 0
	var reasons []string
	for _, o := range outs {
		if o == nil || o.HostRead == "" {
			continue
		}
		n++
		if !slices.Contains(reasons, o.HostRead) {
			reasons = append(reasons, o.HostRead)
		}
	}
	if n == 0 {
		return
	}
	msg := fmt.Sprintf("host read: %d of %d chunks of the %s read chunks kept on a GPU cluster worker's GPU through its host memory (%s)", n, len(outs), describeKernel(st.Kernel), strings.Join(reasons, "; "))
	reportHost(cfg, msg)
}

// reportHost warns of msg, a host step of a cluster worker's task, and notes it for Path: a
// GPU scheduler's host step, or a warning and a note of cfg.
func reportHost(cfg computeConfig, msg string) {
	if g, ok := cfg.sched.(*gpuSched); ok {
		g.hostStep(msg)
		return
	}
	fmt.Fprintf(os.Stderr, "gpuarray warning: %s\n", msg)
	if cfg.notes != nil {
		cfg.notes.Add(msg)
	}
}

// reportLibs notes, for Path, the libraries that ran the calls of outs where there is a choice
// (the CPU's matrix functions: OpenBLAS's LAPACK or gonum), once each.
func reportLibs(cfg computeConfig, outs []*plan.Output) {
	for _, o := range outs {
		if o == nil || o.Lib == "" {
			continue
		}
		if g, ok := cfg.sched.(*gpuSched); ok {
			g.libStep(o.Lib)
		} else if cfg.notes != nil {
			cfg.notes.AddOnce(o.Lib)
		}
	}
}

// Inline runs tasks one after another on the calling goroutine.
func Inline() ComputeOption {
	return func(c *computeConfig) { c.sched = engine.Inline{} }
}

// Threads runs tasks on n goroutines (n <= 0: one per CPU core). At most n tasks are in
// flight, so memory is bounded by n tasks plus the results.
func Threads(n int) ComputeOption {
	return func(c *computeConfig) { c.sched = &engine.Threads{N: n} }
}

// On runs tasks with s, for example a cluster client.
func On(s Scheduler) ComputeOption {
	return func(c *computeConfig) {
		if s == nil {
			c.schedErr = errors.New("gpuarray.On: nil scheduler")
		}
		c.sched = s
	}
}

// OnGPU runs tasks on one NVIDIA GPU: device dev[0], or device 0 when none is given.
func OnGPU(dev ...int) ComputeOption {
	d := 0
	if len(dev) > 0 {
		d = dev[0]
	}
	return func(c *computeConfig) { c.sched, c.schedErr = gpuScheduler([]int{d}) }
}

// OnGPUs runs tasks spread over several NVIDIA GPUs of this machine (all visible ones when
// none are given).
func OnGPUs(devs ...int) ComputeOption {
	return func(c *computeConfig) { c.sched, c.schedErr = gpuScheduler(devs) }
}

// WithContext makes Compute stop when ctx is cancelled (default: the running cell's context).
func WithContext(ctx context.Context) ComputeOption {
	return func(c *computeConfig) { c.ctx = ctx }
}

// WithProgress calls f with the number of finished and total tasks as Compute proceeds.
func WithProgress(f func(done, total int)) ComputeOption {
	return func(c *computeConfig) { c.progress = f }
}

// NoProgressBar keeps Compute from showing a progress bar in the running cell, for work that
// goes on after the cell (a cluster's Compute future); WithProgress still reports.
func NoProgressBar() ComputeOption {
	return func(c *computeConfig) { c.quiet = true }
}

// MemoryLimit sets the most bytes one task may hold, and the most the result may take
// (default: half the machine's memory).
func MemoryLimit(bytes int64) ComputeOption {
	return func(c *computeConfig) { c.memLimit = bytes }
}

// Compute evaluates the array and returns it materialized: on a GPU scheduler (OnGPU,
// OnGPUs) an array result (not a scalar) stays in device memory (Where says "gpu 0"; later GPU
// computations read it in place; ToSlice, printing or a CPU computation copy it to the host
// once; Release frees it), unless it takes more than half the GPUs' free memory (Path says
// so); other results are in host memory, and an array held on a GPU is copied to the host.
// It uses the Threads scheduler on the CPU unless an option picks another, and the running
// cell's context unless WithContext is given; in a cell, a computation that takes a while
// shows a progress bar.
func (a *Array) Compute(opts ...ComputeOption) (*Array, error) {
	if err := a.Err(); err != nil {
		return nil, err
	}
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	out, err := computeArrays(cfg, []*Array{a})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// computeHost is Compute for callers that read the values at once (ToSlice): a result
// computed on a GPU comes to host memory instead of staying there.
func (a *Array) computeHost(opts []ComputeOption) (*Array, error) {
	if err := a.Err(); err != nil {
		return nil, err
	}
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	out, err := computeHost(cfg, []*Array{a})
	if err != nil {
		return nil, err
	}
	return out[0], nil
}

// configure applies the session defaults and opts, and fills in what they leave unset.
func configure(opts []ComputeOption) (computeConfig, error) {
	cfg := computeConfig{}
	for _, o := range withDefaults(opts) {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.schedErr != nil {
		return cfg, cfg.schedErr
	}
	if cfg.sched == nil {
		cfg.sched = &engine.Threads{}
	}
	if cfg.ctx == nil {
		cfg.ctx = display.Context()
	}
	if cfg.memLimit <= 0 {
		cfg.memLimit = engine.DefaultMemoryLimit()
	}
	return cfg, nil
}

// stageOrder returns the nodes to materialize for roots, dependencies first: the reductions
// they contain and the roots themselves, each once, so a node shared by several roots (or a
// root inside another) is computed once and read from memory by the rest.
func stageOrder(roots []*expr.Node) []*expr.Node { return plan.OrderAll(roots) }

// computeArrays computes arrays in one pass (see stageOrder) and returns them materialized.
// On a GPU scheduler (unless cfg.toHost) an array result (rank >= 1) stays in device memory
// (see gpuResults); scalars and other schedulers' results are in host memory.
func computeArrays(cfg computeConfig, arrays []*Array) ([]*Array, error) {
	cfg.notes = &engine.HostNotes{}
	roots := make([]*expr.Node, len(arrays))
	given := arrays
	arrays = append([]*Array(nil), arrays...)
	for i, a := range arrays {
		if hasMask(a.n) { // boolean masks are computed first, to know the lengths
			n, err := resolveMasks(cfg, a.n)
			if err != nil {
				return nil, fmt.Errorf("compute: %w", err)
			}
			arrays[i] = &Array{n: n}
		}
		if n, err := resolveBincounts(cfg, arrays[i].n); err != nil { // bincount_gpu.go
			return nil, fmt.Errorf("compute: %w", err)
		} else if n != arrays[i].n {
			arrays[i] = &Array{n: n}
		}
		if n, err := resolveTakes(cfg, arrays[i].n); err != nil { // take_gpu.go
			return nil, fmt.Errorf("compute: %w", err)
		} else if n != arrays[i].n {
			arrays[i] = &Array{n: n}
		}
		roots[i] = arrays[i].n
		defer pinGraph(arrays[i].n)() // arrays held on a GPU stay there while tasks read them in place
	}
	// Products that later work reads are computed on one GPU first and read there in place.
	rebuilt, release, err := productsOnGPU(cfg, roots)
	if err != nil {
		return nil, fmt.Errorf("compute: %w", err)
	}
	defer release()
	for i, n := range rebuilt {
		if n != roots[i] {
			arrays[i], roots[i] = &Array{n: n}, n
		}
	}
	out := make([]*Array, len(arrays))
	var todo []*expr.Node
	products := map[*expr.Node]*Array{}
	for i, a := range arrays {
		root := a.n
		// A lazy product on one GPU runs as MatMul with OnGPU does (operands generated on
		// the device, C kept there), not as a call stage whose operand and result pass
		// through host memory.
		if p, ok := products[root]; ok {
			out[i] = p
			continue
		}
		if p, err := productOnGPU(cfg, root, false); err != nil {
			return nil, fmt.Errorf("compute: %w", err)
		} else if p != nil {
			out[i], products[root] = p, p
			continue
		}
		if h := selectionHeld(cfg, given[i].n, root); h != nil {
			out[i] = h
			continue
		}
		if root.Buf != nil {
			// Held on a GPU and computed on GPUs: it stays where it is (its host copy is
			// made when read).
			if a.HeldOnGPU() && !cfg.toHost {
				if _, gs := cfg.sched.(*gpuSched); gs {
					out[i] = a
					continue
				}
			}
			// Held elsewhere: copy it to the host. The array keeps its buffer, which owns the
			// host copy's memory (see engine.HostBuffer).
			if _, err := root.Values(); err != nil {
				return nil, fmt.Errorf("compute: %w", err)
			}
			out[i] = a
			continue
		}
		if b := root.DType.Size(); expr.Size(root.Shape)*8 > cfg.memLimit {
			return nil, fmt.Errorf("compute: the result of shape %s (%d bytes as float64, %d as %v) exceeds the memory limit of %d bytes; reduce it or compute it in pieces",
				expr.ShapeString(root.Shape), expr.Size(root.Shape)*8, expr.Size(root.Shape)*int64(b), root.DType, cfg.memLimit)
		}
		todo = append(todo, root)
	}
	g, onGPU := cfg.sched.(*gpuSched)
	var res *gpuResults
	if onGPU && !cfg.toHost {
		res = newGPUResults(g, todo)
	}
	order := stageOrder(todo)
	if res != nil {
		order = res.stages(order)
	}
	total := 0
	for _, n := range order {
		total += stageChunks(n)
	}
	if res != nil {
		for _, n := range res.direct {
			total += stageChunks(n)
		}
	}
	prog := engine.NewProgress(total, cfg.progress, cfg.quiet)
	defer prog.Finish()
	done := map[*expr.Node]dtype.Slice{}
	cfg, releaseKept := withKept(cfg)
	defer releaseKept()
	if res != nil {
		cfg.stayRoots = res.stay
	}
	if err := runOrder(cfg, order, todo, done, prog.Add); err != nil {
		return nil, err
	}
	var held map[*expr.Node]*gpuChunks
	if res != nil {
		var err error
		if held, err = res.keep(cfg, len(order), done, prog.Add); err != nil {
			return nil, err
		}
	}
	prog.OK = true
	heldArrays := map[*expr.Node]*Array{} // one array per held result, however often asked for
	for i, a := range arrays {
		if out[i] != nil {
			continue
		}
		if h, ok := heldArrays[a.n]; ok {
			out[i] = h
			continue
		}
		if gc, ok := held[a.n]; ok {
			n, err := expr.NewBuffered(gc, a.n.Shape, a.n.Chunks)
			if err != nil {
				gc.release()
				return nil, fmt.Errorf("compute: %w", err)
			}
			n.DType = a.n.DType
			out[i] = &Array{n: n, path: g.path() + "; result kept on " + gc.Where()}
			heldArrays[a.n] = out[i]
			continue
		}
		vals, ok := done[a.n]
		if !ok { // data already
			out[i] = a
			continue
		}
		n, err := expr.NewData(vals, a.n.Shape, a.n.Chunks)
		if err != nil {
			return nil, fmt.Errorf("compute: %w", err)
		}
		out[i] = &Array{n: n}
		if p, ok := cfg.sched.(interface{ path() string }); ok {
			out[i].path = p.path()
			if why := res.onHost(a.n); why != "" {
				out[i].path += "; " + why
			}
		} else {
			out[i].path = cfg.notes.String()
		}
	}
	return out, nil
}

// computeHost is computeArrays for callers that read the values at once: results computed on
// a GPU come to host memory instead of staying on the device.
func computeHost(cfg computeConfig, arrays []*Array) ([]*Array, error) {
	cfg.toHost = true
	return computeArrays(cfg, arrays)
}

// stageChunks is the number of tasks of n's stage, for progress.
func stageChunks(n *expr.Node) int {
	iter := n
	if n.Kind == expr.KReduce {
		iter = n.Args[0]
	}
	return expr.NumChunks(iter.Chunks)
}

// runOrder materializes the nodes of order, one stage each, into done. roots are the nodes
// computed from done afterwards (which may read any of order).
func runOrder(cfg computeConfig, order, roots []*expr.Node, done map[*expr.Node]dtype.Slice, progress func(int)) error {
	skip := productOperands(cfg, order, roots)
	counted := map[*expr.Node]bool{}
	at := map[*expr.Node]int{}
	for i, n := range order {
		at[n] = i
	}
	for id := 0; id < len(order); {
		if skip[order[id]] {
			id++ // computed below if its product falls back to the call stage
			continue
		}
		if k := sameOperandReductions(cfg, order[id:]); k > 1 {
			if err := runTogether(cfg, id, order[id:id+k], done, progress); err != nil {
				return err
			}
			id += k
			continue
		}
		// A product on one GPU that a later stage reads, computed as a root product is.
		if vals, ok, err := productValues(cfg, order[id]); err != nil {
			return fmt.Errorf("compute: %w", err)
		} else if ok {
			done[order[id]] = vals
			progress(stageChunks(order[id]))
			for _, b := range order[id].Args[1:] {
				if skip[b] && !counted[b] { // once, though several panel products read it
					counted[b] = true
					progress(stageChunks(b))
				}
			}
			id++
			continue
		}
		if n := order[id]; n.Kind == expr.KCall {
			for _, b := range n.Args[1:] {
				if _, ok := done[b]; skip[b] && !ok {
					vals, err := runStage(cfg, at[b], b, done, progress)
					if err != nil {
						return err
					}
					done[b] = vals
				}
			}
		}
		if n := order[id]; n.Kind == expr.KCall && cfg.kept != nil && (!slices.Contains(roots, n) || cfg.stayRoots[n]) {
			// A call stage that later stages read: its output stays on the GPU.
			if err := runCallStage(cfg, id, n, done, progress); err != nil {
				return err
			}
			id++
			continue
		}
		if n := order[id]; cfg.kept != nil && keptForReshapes(n, order, roots) {
			// An elementwise stage that only reshapes read (the mask under Nonzero's Ravel):
			// its output stays on the GPU, where the reshapes read it in place.
			if ok, err := runKeptStage(cfg, id, n, done, progress); err != nil {
				return err
			} else if ok {
				id++
				continue
			}
		}
		vals, err := runStage(cfg, id, order[id], done, progress)
		if err != nil {
			return err
		}
		done[order[id]] = vals
		id++
	}
	return nil
}

// runCallStage plans call node n as stage id on a GPU and runs it with its output left on the
// device (keepCall), recorded in cfg.kept for the later stages; a call whose output its library
// does not leave there runs as any stage, its values in done.
func runCallStage(cfg computeConfig, id int, n *expr.Node, done map[*expr.Node]dtype.Slice, progress func(int)) error {
	g := cfg.sched.(*gpuSched)
	t0 := time.Now()
	st, err := plan.Lower(id, n, done, cfg.planOpts())
	if err != nil {
		return fmt.Errorf("compute: %w", err)
	}
	g.planSteps(st, t0)
	gc, err := g.keepCall(cfg.ctx, n, st, progress)
	if err == nil {
		d, err := expr.NewBuffered(gc, n.Shape, n.Chunks)
		if err != nil {
			gc.release()
			return fmt.Errorf("compute: %w", err)
		}
		d.DType = n.DType
		cfg.kept[n] = d
		return nil
	}
	if !errors.Is(err, cuda.ErrNotKept) {
		return fmt.Errorf("compute: %w", err)
	}
	outs, err := cfg.sched.Run(cfg.ctx, st.Tasks, progress)
	if err != nil {
		return fmt.Errorf("compute: %w", err)
	}
	reportFallbacks(cfg, st, outs)
	vals, err := st.Assemble(outs)
	if err != nil {
		return fmt.Errorf("compute: %w", err)
	}
	done[n] = vals
	return nil
}

// sameOperandReductions returns how many nodes at the start of order are reductions of one
// operand (x.Mean(0) and x.Std(0), say) that the CPU threads run as one batch, the tasks of a
// chunk next to each other: what one task brings into the cache the other reads there, where
// stage after stage read the operand from memory once per reduction. Stages of one operand
// never read each other. 0 or 1 for other schedulers.
func sameOperandReductions(cfg computeConfig, order []*expr.Node) int {
	if _, ok := cfg.sched.(*engine.Threads); !ok || len(order) == 0 || order[0].Kind != expr.KReduce {
		return 0
	}
	k := 1
	for k < len(order) && order[k].Kind == expr.KReduce && order[k].Args[0] == order[0].Args[0] {
		k++
	}
	return k
}

// runTogether plans nodes as stages id, id+1, ... and runs their tasks in one batch,
// interleaved chunk by chunk; it stores each node's values in done.
func runTogether(cfg computeConfig, id int, nodes []*expr.Node, done map[*expr.Node]dtype.Slice, progress func(int)) error {
	stages := make([]*plan.Stage, len(nodes))
	var tasks []*plan.Task
	for i, n := range nodes {
		st, err := plan.Lower(id+i, n, done, cfg.planOpts())
		if err != nil {
			return fmt.Errorf("compute: %w", err)
		}
		stages[i] = st
	}
	type at struct{ stage, task int }
	var where []at
	for k := 0; ; k++ {
		more := false
		for i, st := range stages {
			if k < len(st.Tasks) {
				tasks = append(tasks, st.Tasks[k])
				where = append(where, at{i, k})
				more = true
			}
		}
		if !more {
			break
		}
	}
	outs, err := cfg.sched.Run(cfg.ctx, tasks, progress)
	if err != nil {
		return fmt.Errorf("compute: %w", err)
	}
	per := make([][]*plan.Output, len(stages))
	for i, st := range stages {
		per[i] = make([]*plan.Output, len(st.Tasks))
	}
	for j, w := range where {
		per[w.stage][w.task] = outs[j]
	}
	for i, st := range stages {
		reportFallbacks(cfg, st, per[i])
		vals, err := st.Assemble(per[i])
		if err != nil {
			return fmt.Errorf("compute: %w", err)
		}
		done[nodes[i]] = vals
	}
	return nil
}

// runStage plans n as stage id and runs it with cfg's scheduler; it returns n's values.
func runStage(cfg computeConfig, id int, n *expr.Node, done map[*expr.Node]dtype.Slice, progress func(int)) (dtype.Slice, error) {
	t0 := time.Now()
	st, err := plan.Lower(id, n, done, cfg.planOpts())
	if err != nil {
		return dtype.Slice{}, fmt.Errorf("compute: %w", err)
	}
	if g, ok := cfg.sched.(*gpuSched); ok {
		g.planSteps(st, t0)
	}
	outs, err := cfg.sched.Run(cfg.ctx, st.Tasks, progress)
	if err != nil {
		return dtype.Slice{}, fmt.Errorf("compute: %w", err)
	}
	reportFallbacks(cfg, st, outs)
	vals, err := st.Assemble(outs)
	if err != nil {
		return dtype.Slice{}, fmt.Errorf("compute: %w", err)
	}
	return vals, nil
}

// ComputeAll computes several arrays in one pass and returns them materialized, in order:
// what they share (a reduction both read, an array that is one of them and part of another)
// is computed once. Arguments are arrays, and ComputeOptions as Compute takes them (a
// scheduler, a context, progress, a memory limit), in any order.
func ComputeAll(args ...any) ([]*Array, error) {
	var arrays []*Array
	var opts []ComputeOption
	for i, x := range args {
		switch v := x.(type) {
		case *Array:
			if err := v.Err(); err != nil {
				return nil, fmt.Errorf("ComputeAll: array %d: %w", len(arrays), err)
			}
			arrays = append(arrays, v)
		case ComputeOption:
			opts = append(opts, v)
		case func(*computeConfig):
			opts = append(opts, v)
		default:
			return nil, fmt.Errorf("ComputeAll: argument %d is a %T, want a *gpuarray.Array or a ComputeOption", i, x)
		}
	}
	cfg, err := configure(opts)
	if err != nil {
		return nil, err
	}
	if len(arrays) == 0 {
		return nil, nil
	}
	return computeArrays(cfg, arrays)
}

// ToSlice computes the array and returns its elements in row-major order.
func (a *Array) ToSlice(opts ...ComputeOption) ([]float64, error) {
	c, err := a.computeHost(opts)
	if err != nil {
		return nil, err
	}
	// A held array's host copy lives as long as its buffer (engine.HostBuffer): c keeps it.
	defer runtime.KeepAlive(c)
	vals, err := c.n.Values()
	if err != nil {
		return nil, err
	}
	if vals.DType() == dtype.Float64 {
		return vals.Clone().Float64s(), nil // on all cores when large
	}
	return vals.ToFloat64(), nil
}

// Float64 computes an array of one element and returns it.
func (a *Array) Float64(opts ...ComputeOption) (float64, error) {
	if err := a.Err(); err != nil {
		return 0, err
	}
	if n := expr.Size(a.n.Shape); n != 1 {
		return 0, fmt.Errorf("Float64 of an array of shape %s (%d elements, want 1)", expr.ShapeString(a.n.Shape), n)
	}
	c, err := a.computeHost(opts)
	if err != nil {
		return 0, err
	}
	vals, err := c.n.Values()
	if err != nil {
		return 0, err
	}
	return vals.Float(0), nil
}
