package cuda

import (
	"context"
	"fmt"
	"math"
	"strings"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Weighted bincounts on the GPU: a task's [value, weight] rows (the fused kernel's values, left
// on the device) are summed by bin in a fixed order, so the bits are the same run to run and
// on any GPU. The task is cut into Slices(m) blocks of contiguous rows, as fused kernels cut
// theirs; thread t of a block adds the weights of rows lo+t, lo+t+256, … in that order into
// its own sums (in local memory); each warp then adds its lanes' sums by a fixed tree of
// shuffles, the block its warps' sums in warp order, and the host the blocks' sums pairwise
// in block order. The CPU adds each chunk's rows one after another: both are sums of the same
// weights, so a bin differs from the CPU's by at most about 2n ulp of the sum of its n
// weights' magnitudes.

// maxWeightedBins is the most bins the GPU sums weights into: each thread keeps its sums in
// local memory and each warp its sums in shared memory (8 warps of 8-byte sums: 48 KiB at
// 768 bins); more run on the host, which Runs says.
const maxWeightedBins = 768

// weightedRuns reports whether the GPU sums the weights of a weighted bincount into n bins,
// or why not.
func weightedRuns(n int) error {
	if n > maxWeightedBins {
		return fmt.Errorf("cuda: weighted bincounts of more than %d bins run on the host (%d bins)", maxWeightedBins, n)
	}
	return nil
}

func weightedName(bins int) string { return fmt.Sprintf("gpn_wbincount_%d", bins) }

// weightedPTX generates the weighted bincount kernel of bins bins: parameters rows (2n float64
// words, [value, weight] per row), n, out (per block, bins float64 sums; after those of all
// S blocks, a flag and a value that is not an integer in [0, bins)), S.
func weightedPTX(version, target string, bins int) string {
	g := &gen{n: map[string]int{}, used: map[string]bool{}}
	warps := BlockSize / 32
	rows, n, out, S := g.rd(), g.rd(), g.rd(), g.rd()
	for _, p := range [][2]string{{rows, "rows"}, {n, "n"}, {out, "out"}, {S, "S"}} {
		g.ins("ld.param.u64 %s, [%s]", p[0], p[1])
	}
	g.ins("cvta.to.global.u64 %s, %s", rows, rows)
	g.ins("cvta.to.global.u64 %s, %s", out, out)
	b32, tid32 := g.r(), g.r()
	g.ins("mov.u32 %s, %%ctaid.x", b32)
	g.ins("mov.u32 %s, %%tid.x", tid32)
	b, tid := g.rd(), g.rd()
	g.ins("cvt.u64.u32 %s, %s", b, b32)
	g.ins("cvt.u64.u32 %s, %s", tid, tid32)
	// This block's rows [lo, hi): n*b/S, n*(b+1)/S, as SliceRange.
	lo, hi, t := g.rd(), g.rd(), g.rd()
	g.ins("mul.lo.u64 %s, %s, %s", t, n, b)
	g.ins("div.u64 %s, %s, %s", lo, t, S)
	g.ins("add.u64 %s, %s, %s", t, t, n)
	g.ins("div.u64 %s, %s, %s", hi, t, S)
	// Zero the thread's sums.
	priv, k, a := g.rd(), g.rd(), g.rd()
	g.ins("mov.u64 %s, gpn_wsums", priv)
	p := g.p()
	zero, zeroed := g.label("wzero"), g.label("wzeroed")
	g.ins("mov.u64 %s, 0", k)
	g.put(zero)
	g.ins("setp.ge.u64 %s, %s, %d", p, k, bins)
	g.ins("@%s bra %s", p, zeroed)
	g.ins("mad.lo.u64 %s, %s, 8, %s", a, k, priv)
	g.ins("st.local.u64 [%s], 0", a)
	g.ins("add.u64 %s, %s, 1", k, k)
	g.ins("bra %s", zero)
	g.put(zeroed)
	// The thread's rows, in order.
	e := g.rd()
	g.ins("add.u64 %s, %s, %s", e, lo, tid)
	loop, done, next, bad := g.label("wloop"), g.label("wdone"), g.label("wnext"), g.label("wbad")
	g.put(loop)
	g.ins("setp.ge.u64 %s, %s, %s", p, e, hi)
	g.ins("@%s bra %s", p, done)
	ra, v, w, kf, s := g.rd(), g.fd(), g.fd(), g.fd(), g.fd()
	g.ins("mad.lo.u64 %s, %s, 16, %s", ra, e, rows)
	g.ins("ld.global.nc.f64 %s, [%s]", v, ra)
	g.ins("ld.global.nc.f64 %s, [%s+8]", w, ra)
	g.ins("cvt.rzi.s64.f64 %s, %s", k, v)
	g.ins("cvt.rn.f64.s64 %s, %s", kf, k)
	q := g.p()
	g.ins("setp.neu.f64 %s, %s, %s", p, kf, v)
	g.ins("setp.lt.s64 %s, %s, 0", q, k)
	g.ins("or.pred %s, %s, %s", p, p, q)
	g.ins("setp.ge.s64 %s, %s, %d", q, k, bins)
	g.ins("or.pred %s, %s, %s", p, p, q)
	g.ins("@%s bra %s", p, bad)
	g.ins("mad.lo.u64 %s, %s, 8, %s", a, k, priv)
	g.ins("ld.local.f64 %s, [%s]", s, a)
	g.ins("add.rn.f64 %s, %s, %s", s, s, w)
	g.ins("st.local.f64 [%s], %s", a, s)
	g.ins("bra %s", next)
	g.put(bad)
	fa := g.rd()
	g.ins("mul.lo.u64 %s, %s, %d", fa, S, 8*bins)
	g.ins("add.u64 %s, %s, %s", fa, fa, out)
	g.ins("st.global.f64 [%s+8], %s", fa, v)
	g.ins("st.global.u64 [%s], 1", fa)
	g.put(next)
	g.ins("add.u64 %s, %s, %d", e, e, BlockSize)
	g.ins("bra %s", loop)
	g.put(done)
	// Each warp adds its lanes' sums, bin by bin (every lane takes part in the shuffles), and
	// its lane 0 keeps them in shared memory.
	lane, warp, sh, sa, p0 := g.r(), g.r(), g.r(), g.r(), g.p()
	g.ins("and.b32 %s, %s, 31", lane, tid32)
	g.ins("shr.u32 %s, %s, 5", warp, tid32)
	g.ins("setp.eq.u32 %s, %s, 0", p0, lane)
	g.ins("mov.u32 %s, gpn_wwarps", sh)
	g.ins("mul.lo.u32 %s, %s, %d", sa, warp, 8*bins)
	g.ins("add.u32 %s, %s, %s", sa, sa, sh)
	wl, wd := g.label("wwarp"), g.label("wwarped")
	g.ins("mov.u64 %s, 0", k)
	g.put(wl)
	g.ins("setp.ge.u64 %s, %s, %d", p, k, bins)
	g.ins("@%s bra %s", p, wd)
	g.ins("mad.lo.u64 %s, %s, 8, %s", a, k, priv)
	acc := g.fd()
	g.ins("ld.local.f64 %s, [%s]", acc, a)
	for o := 16; o >= 1; o /= 2 {
		g.ins("add.rn.f64 %s, %s, %s", acc, acc, g.shfl64(acc, o, true))
	}
	g.ins("@%s st.shared.f64 [%s], %s", p0, sa, acc)
	g.ins("add.u32 %s, %s, 8", sa, sa)
	g.ins("add.u64 %s, %s, 1", k, k)
	g.ins("bra %s", wl)
	g.put(wd)
	g.ins("bar.sync 0")
	// The block's sums: its warps' in warp order, into the block's slot of out.
	bl, bd := g.label("wblock"), g.label("wblocked")
	kb, x := g.r(), g.fd()
	g.ins("mov.u32 %s, %s", kb, tid32)
	g.put(bl)
	g.ins("setp.ge.u32 %s, %s, %d", p, kb, bins)
	g.ins("@%s bra %s", p, bd)
	g.ins("mad.lo.u32 %s, %s, 8, %s", sa, kb, sh)
	g.ins("ld.shared.f64 %s, [%s]", acc, sa)
	for wi := 1; wi < warps; wi++ {
		g.ins("ld.shared.f64 %s, [%s+%d]", x, sa, 8*bins*wi)
		g.ins("add.rn.f64 %s, %s, %s", acc, acc, x)
	}
	oa := g.rd()
	g.ins("mul.lo.u64 %s, %s, %d", oa, b, bins)
	g.ins("cvt.u64.u32 %s, %s", t, kb)
	g.ins("add.u64 %s, %s, %s", oa, oa, t)
	g.ins("mad.lo.u64 %s, %s, 8, %s", oa, oa, out)
	g.ins("st.global.f64 [%s], %s", oa, acc)
	g.ins("add.u32 %s, %s, %d", kb, kb, BlockSize)
	g.ins("bra %s", bl)
	g.put(bd)
	g.ins("ret")

	var m strings.Builder
	fmt.Fprintf(&m, "// Generated by gpunotes (gpuarray/cuda/wbincount.go).\n.version %s\n.target %s\n.address_size 64\n\n", version, target)
	fmt.Fprintf(&m, ".visible .entry %s(\n\t.param .u64 rows,\n\t.param .u64 n,\n\t.param .u64 out,\n\t.param .u64 S\n)\n.maxntid %d, 1, 1\n{\n", weightedName(bins), BlockSize)
	for _, pre := range []string{"p", "r", "rd", "fd"} {
		if c := g.n[pre]; c > 0 {
			typ := map[string]string{"p": ".pred", "r": ".b32", "rd": ".b64", "fd": ".f64"}[pre]
			fmt.Fprintf(&m, "\t.reg %s %%%s<%d>;\n", typ, pre, c+1)
		}
	}
	fmt.Fprintf(&m, "\t.local .align 8 .b8 gpn_wsums[%d];\n", 8*bins)
	fmt.Fprintf(&m, "\t.shared .align 8 .b8 gpn_wwarps[%d];\n", 8*bins*warps)
	m.WriteString(g.body.String())
	m.WriteString("}\n")
	return m.String()
}

// weightedFunction returns the linked weighted bincount kernel of bins bins (on the device
// goroutine).
func (d *Device) weightedFunction(bins int) (driver.Function, error) {
	return d.generated(weightedName(bins), func() (string, error) { return weightedPTX(d.lib.version, d.lib.target, bins), nil })
}

// weightedSums sums the weights of the m [value, weight] rows at rows (on d) by bin, in the
// fixed order of weightedPTX. It runs on the device goroutine (inside Do).
func (d *Device) weightedSums(rows driver.DevicePtr, m int64, bins int) ([]float64, error) {
	sums := make([]float64, bins)
	S := Slices(m)
	if S == 0 {
		return sums, nil
	}
	fn, err := d.weightedFunction(bins)
	if err != nil {
		return nil, err
	}
	words := S*bins + 2
	out, err := d.pool.Alloc(uint64(words) * 8)
	if err != nil {
		return nil, err
	}
	defer d.pool.Free(out)
	if err := driver.MemsetD32Async(out+driver.DevicePtr(S*bins*8), 0, 4, d.stream); err != nil {
		return nil, err
	}
	if err := d.launchWords(fn, weightedName(bins), uint32(S), uint64(rows), uint64(m), uint64(out), uint64(S)); err != nil {
		return nil, err
	}
	if err := d.stream.Synchronize(); err != nil {
		return nil, fmt.Errorf("kernel %s: %w", weightedName(bins), err)
	}
	host, err := d.staging(uint64(words) * 8)
	if err != nil {
		return nil, err
	}
	if err := driver.MemcpyDtoH(unsafe.Pointer(&host[0]), out, uint64(words)*8); err != nil {
		return nil, fmt.Errorf("download weighted sums: %w", err)
	}
	if host[S*bins] != 0 {
		return nil, &CountError{Value: math.Float64frombits(host[S*bins+1]), Bins: bins}
	}
	return combineBlocks(host[:S*bins], S, bins), nil
}

// combineBlocks adds S blocks' sums of bins bins (block after block in words, float64 bits)
// pairwise in block order.
func combineBlocks(words []uint64, S, bins int) []float64 {
	sums := make([]float64, bins)
	col := make([]float64, S)
	for k := range sums {
		for b := range col {
			col[b] = math.Float64frombits(words[b*bins+k])
		}
		sums[k] = PairwiseSum(col)
	}
	return sums
}

// runWeighted runs weighted bincount tasks: each task's rows computed on the device of its
// run of tasks (left there), then summed there.
func runWeighted(ctx context.Context, devs []*Device, tasks []*plan.Task) ([]*plan.Output, error) {
	ek := tasks[0].Kernel.Elementwise()
	bins := tasks[0].Kernel.Call.N
	outs := make([]*plan.Output, len(tasks))
	err := eachDevice(devs, len(tasks), func(d *Device, lo, hi int) error {
		sub := make([]*plan.Task, hi-lo)
		for i := range sub {
			c := *tasks[lo+i]
			c.Kernel = ek
			sub[i] = &c
		}
		ptrs, free, err := RunPlanKeep(ctx, d, sub)
		if err != nil {
			return err
		}
		defer free()
		return d.Do(ctx, func() error {
			for i, t := range sub {
				sums, err := d.weightedSums(ptrs[i], int64(t.Shape[0]), bins)
				if err != nil {
					return fmt.Errorf("chunk %d: %w", t.Index, err)
				}
				outs[lo+i] = &plan.Output{Shape: []int{bins}, Data: dtype.OfFloat64(sums)}
			}
			return nil
		})
	})
	if err != nil {
		return nil, err
	}
	return outs, nil
}
