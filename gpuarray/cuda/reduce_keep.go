package cuda

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// ErrNotKept says that RunPlanSumKeep does not combine this reduction on the device; the
// caller computes it as any other stage.
var ErrNotKept = errors.New("cuda: this reduction is not combined on the device")

// maxCombineLoads bounds the partials one thread of a combine kernel reads (the slices of a
// group's tasks together): the kernel is straight-line code.
const maxCombineLoads = 256

// RunPlanSumKeep runs the plan tasks of a sum or a mean over some axes on d and leaves each
// group's result on the device: groups[g] lists the tasks whose partials make result chunk g,
// in the order the host's combine takes them, and ptrs[g] is a new allocation of d's pool
// (the caller's) holding the chunk row-major over the kept axes, in the fused kernel's float64
// words. divisor is the number of elements reduced per result (a mean; 0 for a sum), and
// f32 rounds the result to float32. The partials stay on the device and one generated kernel
// combines them in the host's order (a task's slices summed pairwise as collectAxes does, a
// group's tasks pairwise as plan.Stage.Assemble does, then the division and the rounding), so
// the bits are those of the host's combine, without the partials' trip to the host and the
// result's back. It returns ErrNotKept, before running anything, for reductions it does not
// combine so (other reductions, several launches, more than maxCombineLoads partials per
// result).
func RunPlanSumKeep(ctx context.Context, d *Device, tasks []*plan.Task, groups [][]int, divisor float64, f32 bool) ([]driver.DevicePtr, error) {
	return runPlanCombine(ctx, d, tasks, groups, RSum, func(sl []int64) string { return combineName(sl, divisor, f32) },
		func(version, target, name string, sl []int64) string {
			return combinePTX(version, target, name, sl, divisor, f32)
		})
}

// RunPlanWelfordKeep is RunPlanSumKeep for a variance (std false) or a standard deviation over
// some axes: the combine kernel merges a task's slices' (count, mean, M2) in slice order as
// collectAxes does (MergeWelford), the group's tasks pairwise as plan.Stage.Assemble does
// (plan.Chan, the same steps), then divides M2 by the count, takes the square root for a
// standard deviation and rounds to float32 if f32, as Assemble does: the host's bits, without
// the partials' three words per slice going to the host and the result coming back.
func RunPlanWelfordKeep(ctx context.Context, d *Device, tasks []*plan.Task, groups [][]int, std, f32 bool) ([]driver.DevicePtr, error) {
	return runPlanCombine(ctx, d, tasks, groups, RWelford, func(sl []int64) string { return welfordCombineName(sl, std, f32) },
		func(version, target, name string, sl []int64) string {
			return welfordCombinePTX(version, target, name, sl, std, f32)
		})
}

// runPlanCombine is RunPlanSumKeep and RunPlanWelfordKeep: the partial reduction's tasks of
// reduction want, then per group one combine kernel (named by name, written by gen for the
// group's slice counts).
func runPlanCombine(ctx context.Context, d *Device, tasks []*plan.Task, groups [][]int, want Reduce, name func(sl []int64) string, gen func(version, target, name string, sl []int64) string) ([]driver.DevicePtr, error) {
	if len(tasks) == 0 || len(tasks) > MaxTasksPerLaunch || tasks[0].Kernel.Call != nil {
		return nil, ErrNotKept
	}
	k := tasks[0].Kernel
	s, leaves, err := Lower(k)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotKept, err)
	}
	if s.Kept == 0 || s.Reduce != want || s.accLane() != laneF {
		// Integer and complex sums (reduce_lanes.go) combine on the host.
		return nil, ErrNotKept
	}
	gts := make([]Task, len(tasks))
	cache := gatherCache{}
	for i, t := range tasks {
		if t.Kernel != k && t.Kernel.Key() != k.Key() {
			return nil, ErrNotKept
		}
		if gts[i], err = lowerTask(t, leaves, s.Leaves(), cache); err != nil {
			return nil, err
		}
		if err := gts[i].validate(s); err != nil {
			return nil, fmt.Errorf("task %d: %w", i, err)
		}
	}
	if s, err = heldOn([]*Device{d}, s, gts); err != nil {
		return nil, err
	}
	ks, ns, ss := make([]int64, len(gts)), make([]int64, len(gts)), make([]int64, len(gts))
	offs := map[int]int64{}
	var slots, gridX int64
	for i := range gts {
		ks[i], ns[i] = axesShape(s, &gts[i])
		if ks[i] == 0 || ns[i] == 0 {
			return nil, ErrNotKept
		}
		ss[i] = axesSlices(s, ks[i], ns[i])
		gridX = max(gridX, axesGridX(s, ks[i], ss[i]))
		offs[i] = slots
		slots += ks[i] * ss[i]
	}
	if slots*int64(s.partialWords()) > maxAxesWords {
		return nil, ErrNotKept
	}
	seen := make([]bool, len(gts))
	for _, g := range groups {
		var loads int64
		for _, i := range g {
			if i < 0 || i >= len(gts) || seen[i] || ks[i] != ks[g[0]] {
				return nil, fmt.Errorf("cuda: combine groups %v of %d tasks (internal)", groups, len(gts))
			}
			seen[i] = true
			loads += ss[i]
		}
		if len(g) == 0 || loads > maxCombineLoads {
			return nil, ErrNotKept
		}
	}
	ptrs := make([]driver.DevicePtr, len(groups))
	err = d.Do(ctx, func() error {
		fn, err := d.kernel(s)
		if err != nil {
			return err
		}
		up := newUploads(d)
		defer up.release()
		op, err := d.axesPartials(up, fn, "gpn_axes_"+s.Key(), s, gts, 0, ks, ns, ss, offs, slots, gridX, axesDescWords(s.Rank, s.Leaves()), randomKeys(s), Options{})
		if err != nil {
			return err
		}
		// Groups of one shape (their tasks' slice counts) share a combine kernel.
		bySig := map[string][]int{}
		var sigs []string
		for gi, g := range groups {
			sl := make([]int64, len(g))
			for j, i := range g {
				sl[j] = ss[i]
			}
			sig := fmt.Sprint(sl)
			if _, ok := bySig[sig]; !ok {
				sigs = append(sigs, sig)
			}
			bySig[sig] = append(bySig[sig], gi)
		}
		for gi, g := range groups {
			p, err := d.pool.Alloc(uint64(ks[g[0]]) * 8)
			if err != nil {
				return err
			}
			ptrs[gi] = p
		}
		for _, sig := range sigs {
			gs := bySig[sig]
			g0 := groups[gs[0]]
			sl := make([]int64, len(g0))
			for j, i := range g0 {
				sl[j] = ss[i]
			}
			name := name(sl)
			cf, err := d.generated(name, func() (string, error) { return gen(d.lib.version, d.lib.target, name, sl), nil })
			if err != nil {
				return err
			}
			// Per group: K, the result's address, then each task's first partial slot.
			W := 2 + len(g0)
			desc := make([]uint64, W*len(gs))
			var maxK int64
			for j, gi := range gs {
				w := desc[j*W : (j+1)*W]
				g := groups[gi]
				w[0], w[1] = uint64(ks[g[0]]), uint64(ptrs[gi])
				for t, i := range g {
					w[2+t] = uint64(offs[i])
				}
				maxK = max(maxK, ks[g[0]])
			}
			dp, err := up.alloc(uint64(len(desc)) * 8)
			if err != nil {
				return err
			}
			if err := driver.MemcpyHtoD(dp, unsafe.Pointer(&desc[0]), uint64(len(desc))*8); err != nil {
				return fmt.Errorf("upload combine descriptors: %w", err)
			}
			grid := [3]uint32{uint32((maxK + BlockSize - 1) / BlockSize), uint32(len(gs)), 1}
			descArg, partsArg := uint64(dp), uint64(op)
			params := []unsafe.Pointer{unsafe.Pointer(&descArg), unsafe.Pointer(&partsArg)}
			lerr := cf.Launch(grid, [3]uint32{BlockSize, 1, 1}, 0, d.stream, params)
			if lerr == nil {
				lerr = d.stream.Synchronize()
			}
			if lerr != nil {
				return fmt.Errorf("kernel %s (grid %dx%dx1): %w", name, grid[0], grid[1], lerr)
			}
		}
		return nil
	})
	if err != nil {
		_ = d.Do(context.Background(), func() error {
			for _, p := range ptrs {
				if p != 0 {
					d.pool.Free(p)
				}
			}
			return nil
		})
		return nil, err
	}
	return ptrs, nil
}

func combineName(sl []int64, divisor float64, f32 bool) string {
	var b strings.Builder
	b.WriteString("gpn_combine")
	for _, s := range sl {
		fmt.Fprintf(&b, "_%d", s)
	}
	fmt.Fprintf(&b, "_d%016x", math.Float64bits(divisor))
	if f32 {
		b.WriteString("_f32")
	}
	return b.String()
}

// combinePTX writes the kernel that combines a group's partial sums: thread q of group
// blockIdx.y (descriptor words K, result address, then the first slot of each of its
// len(sl) tasks) sums task j's sl[j] slices (slot off_j + b*K + q) pairwise, then the tasks
// pairwise (left half, right half, then the two), divides by divisor (unless 0), rounds to
// float32 if f32, and stores element q of the result.
func combinePTX(version, target, name string, sl []int64, divisor float64, f32 bool) string {
	g := &gen{n: map[string]int{}}
	c := g.combineHead(len(sl))
	vals := make([][]string, len(sl))
	for j, n := range sl {
		for b := range n {
			v := g.fd()
			g.ins("ld.global.nc.f64 %s, [%s]", v, g.combineSlot(c, j, b, 1))
			vals[j] = append(vals[j], v)
		}
	}
	var pairwise func(xs []string) string
	pairwise = func(xs []string) string {
		if len(xs) == 1 {
			return xs[0]
		}
		h := len(xs) / 2
		a, b := pairwise(xs[:h]), pairwise(xs[h:])
		o := g.fd()
		g.ins("add.rn.f64 %s, %s, %s", o, a, b)
		return o
	}
	tasks := make([]string, len(sl))
	for j := range sl {
		tasks[j] = pairwise(vals[j])
	}
	v := pairwise(tasks)
	if divisor != 0 {
		o := g.fd()
		g.ins("div.rn.f64 %s, %s, %s", o, v, f64imm(divisor))
		v = o
	}
	return g.combineTail(c, v, f32, version, target, name, "combine of partial sums")
}

func welfordCombineName(sl []int64, std, f32 bool) string {
	var b strings.Builder
	b.WriteString("gpn_combine_welford")
	for _, s := range sl {
		fmt.Fprintf(&b, "_%d", s)
	}
	if std {
		b.WriteString("_std")
	}
	if f32 {
		b.WriteString("_f32")
	}
	return b.String()
}

// welfordCombinePTX writes the kernel that combines a group's Welford partials (count, mean,
// M2 in three words per slot) for element q as the host does: task j's sl[j] slices merged in
// slice order (collectAxes, MergeWelford), the tasks merged pairwise (plan.Stage.Assemble's
// tree, plan.Chan), then M2 / count, its square root for a standard deviation (std), rounded
// to float32 if f32.
func welfordCombinePTX(version, target, name string, sl []int64, std, f32 bool) string {
	g := &gen{n: map[string]int{}}
	c := g.combineHead(len(sl))
	type acc struct{ n, m, q string }
	tasks := make([]acc, len(sl))
	for j, ns := range sl {
		a := acc{g.fd(), g.fd(), g.fd()}
		for _, r := range []string{a.n, a.m, a.q} {
			g.ins("mov.f64 %s, %s", r, f64imm(0))
		}
		for b := range ns {
			ad := g.combineSlot(c, j, b, 3)
			n2, m2, q2 := g.fd(), g.fd(), g.fd()
			g.ins("ld.global.nc.f64 %s, [%s]", n2, ad)
			g.ins("ld.global.nc.f64 %s, [%s+8]", m2, ad)
			g.ins("ld.global.nc.f64 %s, [%s+16]", q2, ad)
			g.merge(RWelford, "", "", "", a.n, a.m, a.q, "", "", n2, m2, q2)
		}
		tasks[j] = a
	}
	var tree func(xs []acc) acc
	tree = func(xs []acc) acc {
		if len(xs) == 1 {
			return xs[0]
		}
		h := len(xs) / 2
		a, b := tree(xs[:h]), tree(xs[h:])
		g.merge(RWelford, "", "", "", a.n, a.m, a.q, "", "", b.n, b.m, b.q)
		return a
	}
	a := tree(tasks)
	v := g.fd()
	g.ins("div.rn.f64 %s, %s, %s", v, a.q, a.n)
	if std {
		g.ins("sqrt.rn.f64 %s, %s", v, v)
	}
	return g.combineTail(c, v, f32, version, target, name, "combine of Welford partials")
}

// combineRegs are the registers of a combine kernel's head: the group's descriptor, the
// partials, the element q, the group's K and its result's address.
type combineRegs struct{ d, parts, q, K, out, exit string }

// combineHead emits a combine kernel's start: thread q of group blockIdx.y, descriptor words
// K, result address, then the first slot of each of its tasks tasks; threads past K exit.
func (g *gen) combineHead(tasks int) combineRegs {
	W := 2 + tasks
	desc, parts := g.rd(), g.rd()
	g.ins("ld.param.u64 %s, [desc]", desc)
	g.ins("ld.param.u64 %s, [parts]", parts)
	g.ins("cvta.to.global.u64 %s, %s", desc, desc)
	g.ins("cvta.to.global.u64 %s, %s", parts, parts)
	ty, bx, tx := g.r(), g.r(), g.r()
	g.ins("mov.u32 %s, %%ctaid.y", ty)
	g.ins("mov.u32 %s, %%ctaid.x", bx)
	g.ins("mov.u32 %s, %%tid.x", tx)
	c := combineRegs{d: g.rd(), parts: parts, q: g.rd(), K: g.rd(), out: g.rd(), exit: g.label("exit")}
	t := g.rd()
	g.ins("mul.wide.u32 %s, %s, %d", t, ty, W*8)
	g.ins("add.u64 %s, %s, %s", c.d, desc, t)
	g.ins("ld.global.nc.u64 %s, [%s]", c.K, c.d)
	g.ins("ld.global.nc.u64 %s, [%s+8]", c.out, c.d)
	g.ins("cvta.to.global.u64 %s, %s", c.out, c.out)
	g.ins("mul.wide.u32 %s, %s, %d", c.q, bx, BlockSize)
	g.ins("cvt.u64.u32 %s, %s", t, tx)
	g.ins("add.u64 %s, %s, %s", c.q, c.q, t)
	pe := g.p()
	g.ins("setp.ge.u64 %s, %s, %s", pe, c.q, c.K)
	g.ins("@%s bra %s", pe, c.exit)
	return c
}

// combineSlot returns the address of slice b of task j's partial for element q (slot
// off_j + b*K + q, of words words).
func (g *gen) combineSlot(c combineRegs, j int, b int64, words int) string {
	off, t, ad := g.rd(), g.rd(), g.rd()
	g.ins("ld.global.nc.u64 %s, [%s+%d]", off, c.d, 16+8*j)
	g.ins("add.u64 %s, %s, %s", off, off, c.q)
	if b > 0 {
		g.ins("mul.lo.u64 %s, %s, %d", t, c.K, b)
		g.ins("add.u64 %s, %s, %s", off, off, t)
	}
	g.ins("mul.lo.u64 %s, %s, %d", ad, off, 8*words)
	g.ins("add.u64 %s, %s, %s", ad, ad, c.parts)
	return ad
}

// combineTail emits a combine kernel's end (v rounded to float32 if f32, stored as element q
// of the result) and returns the module.
func (g *gen) combineTail(c combineRegs, v string, f32 bool, version, target, name, what string) string {
	if f32 {
		f, o := g.f(), g.fd()
		g.ins("cvt.rn.f32.f64 %s, %s", f, v)
		g.ins("cvt.f64.f32 %s, %s", o, f)
		v = o
	}
	ad := g.rd()
	g.ins("shl.b64 %s, %s, 3", ad, c.q)
	g.ins("add.u64 %s, %s, %s", ad, ad, c.out)
	g.ins("st.global.f64 [%s], %s", ad, v)
	g.put(c.exit)
	g.ins("ret")

	var b strings.Builder
	fmt.Fprintf(&b, "// Generated by gpunotes (gpuarray/cuda): %s.\n.version %s\n.target %s\n.address_size 64\n\n", what, version, target)
	fmt.Fprintf(&b, ".visible .entry %s(\n\t.param .u64 desc,\n\t.param .u64 parts\n)\n.maxntid %d, 1, 1\n{\n", name, BlockSize)
	for _, pre := range []string{"p", "r", "rd", "f", "fd"} {
		if n := g.n[pre]; n > 0 {
			typ := map[string]string{"p": ".pred", "r": ".b32", "rd": ".b64", "f": ".f32", "fd": ".f64"}[pre]
			fmt.Fprintf(&b, "\t.reg %s %%%s<%d>;\n", typ, pre, n+1)
		}
	}
	b.WriteString(g.body.String())
	b.WriteString("}\n")
	return b.String()
}
