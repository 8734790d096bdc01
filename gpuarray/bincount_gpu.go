package gpuarray

import (
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Bincount and Histogram on a GPU (issue 32): a bincount is a call that counts each chunk
// (expr.FnBincount) and a sum of the chunks' counts. On one GPU the counting kernel's tasks add
// into one set of device counters instead (cuda.CountTotal), so the whole bincount is counted
// and summed on the device and stays there, read in place by what follows (Histogram's slice,
// a chained stage); nothing is assembled on the host. On by default since its first GPU run
// (TestGPUBincountOnDevice passed on an H200; bincount(iv) of 1e8 read back 0.91 ms against
// 3.0 ms counted per chunk and CuPy's 2.27, bench/RESULTS.md); GPUNOTES_GPU_BINCOUNT_KEEP=0
// counts per chunk as before.
var bincountKeep = os.Getenv("GPUNOTES_GPU_BINCOUNT_KEEP") != "0"

// bincountSum returns the bincount call whose chunks' counts node n sums (bincount's
// per.Reshape(k, N).Sum(0)), or nil when n is no such sum.
func bincountSum(n *expr.Node) *expr.Node {
	if n.Kind != expr.KReduce || n.Red != expr.Sum || !slices.Equal(n.Axes, []int{0}) || len(n.Args) != 1 || len(n.Shape) != 1 {
		return nil
	}
	c := n.Args[0]
	for c.Kind == expr.KReshape || c.Kind == expr.KView {
		if len(c.Args) != 1 {
			return nil
		}
		c = c.Args[0]
	}
	if c.Kind != expr.KCall || c.Call == nil || c.Call.Fn != expr.FnBincount || c.Call.N != n.Shape[0] {
		return nil
	}
	return c
}

// bincountTotals says why a GPU compute would not count bincount sum n on the device into one
// array (bincountOnDevice), planned as stage st of its call, or "" when it does. It needs no
// GPU: the planning tests call it.
func bincountTotals(n *expr.Node, st *plan.Stage) string {
	c := bincountSum(n)
	switch {
	case c == nil:
		return "not a bincount's sum of its chunks"
	case n.DType != dtype.Int64:
		return "weighted sums are added in a fixed order on the host"
	case len(n.Chunks) != 1 || len(n.Chunks[0]) != 1:
		return "the counts are in several chunks (internal)"
	case st == nil || !oneKernel(st) || st.Kernel.Call == nil:
		return "not one call kernel"
	case st.Gathered || cuda.HostGathers(st):
		return "a take or mask the count reads is gathered on the host"
	}
	return cuda.CountsTotal(st.Kernel)
}

// resolveBincounts rebuilds root's graph with each bincount sum that one GPU counts on the
// device (bincountTotals) replaced by its counts, held there. Others are left as they are.
func resolveBincounts(cfg computeConfig, root *expr.Node) (*expr.Node, error) {
	g, ok := cfg.sched.(*gpuSched)
	if !ok || g == nil || len(g.devs) != 1 || !bincountKeep {
		return root, nil
	}
	return rewriteGraph(root, func(n *expr.Node) (*expr.Node, error) {
		if c := bincountSum(n); c != nil {
			return bincountOnDevice(cfg, g, n, c)
		}
		return nil, nil
	})
}

// bincountOnDevice counts bincount sum n (of call c) on the scheduler's one GPU into one device
// array and returns it as a node held there; nil, with no error, when it does not
// (bincountTotals says why, in Path).
func bincountOnDevice(cfg computeConfig, g *gpuSched, n, c *expr.Node) (*expr.Node, error) {
	t0 := time.Now()
	defer pinGraph(c)() // arrays held on the GPU stay there while the count reads them
	st, err := plan.Lower(0, c, map[*expr.Node]dtype.Slice{}, cfg.planOpts())
	if err != nil {
		g.libStep(fmt.Sprintf("bincount: counted per chunk (its input needs earlier stages: %v)", err))
		return nil, nil
	}
	if why := bincountTotals(n, st); why != "" {
		g.libStep("bincount: counted per chunk (" + why + ")")
		return nil, nil
	}
	d := g.devs[0]
	p, err := cuda.CountTotal(cfg.ctx, d, st.Tasks)
	if err != nil {
		return nil, fmt.Errorf("gpu %d: %w", d.Info.Index, err) // a CountError says bincount
	}
	bins := n.Shape[0]
	gc := &gpuChunks{grid: newChunkGrid(n.Shape, n.Chunks), ptrs: []driver.DevicePtr{p}, devs: []*cuda.Device{d},
		offs: [][]int{{0}}, dt: dtype.Int64, label: "on", allocs: []devAllocs{{dev: d, ptrs: []driver.DevicePtr{p}}}}
	gc.idle.L = &gc.mu
	gc.addCleanup()
	r, err := expr.NewBuffered(gc, n.Shape, n.Chunks)
	if err != nil {
		gc.freeNow()
		return nil, fmt.Errorf("bincount: %w", err)
	}
	r.DType = dtype.Int64
	g.libStep(fmt.Sprintf("bincount: %d chunks counted into one array of %d on the device (counts summed there, none assembled on the host) in %.3g s", len(st.Tasks), bins, time.Since(t0).Seconds()))
	return r, nil
}
