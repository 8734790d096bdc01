package gpuarray

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/blas"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// matmulOnDevice computes a·b (both 2-d, a's column chunks equal to b's row chunks) with the
// blocks of both operands generated on the GPU, or already held there, and kept there. C stays
// on the device too (an array held on the GPU, read back when asked for) where it fits in the
// pool with the operands, else it comes to the host panel by panel. It reports ok = false,
// and computes nothing, when the operands and two row panels of C do not fit or an operand's
// last stage is not an elementwise GPU kernel; the caller then takes the block-by-block path.
func (c *linalgConfig) matmulOnDevice(ctx context.Context, g blas.DeviceGemm, a, b *Array) (out *Array, ok bool, err error) {
	sa, sb := a.n.Shape, b.n.Shape
	if len(sa) != 2 || len(sb) != 2 || !slices.Equal(a.n.Chunks[1], b.n.Chunks[0]) {
		return nil, false, nil
	}
	dev := g.Device()
	operands := deviceBytes(a.n, dev) + deviceBytes(b.n, dev)
	// Panels are rounded up to the pool's size classes: at most an eighth more.
	whole := uint64(expr.Size([]int{sa[0], sb[1]})) * 8 * 9 / 8
	panels := blas.PanelBytes(blas.Blocks{Grid: linalg.Grid{RowChunks: a.n.Chunks[0]}}, blas.Blocks{Grid: linalg.Grid{ColChunks: b.n.Chunks[1]}})
	free := available(ctx, dev) * 9 / 10
	keep := operands+whole <= free
	if !keep && operands+panels > free {
		return nil, false, nil
	}
	ab, freeA, ok, err := c.blocksOnDevice(ctx, dev, a.n)
	if err != nil || !ok {
		return nil, ok, err
	}
	defer freeA()
	bb, freeB, ok, err := c.blocksOnDevice(ctx, dev, b.n)
	if err != nil || !ok {
		return nil, ok, err
	}
	defer freeB()
	prog := engine.NewProgress(len(a.n.Chunks[0]), c.progress, false)
	defer prog.Finish()
	step := func(done, total int) { prog.Add(1) }
	if keep {
		ps, perr := blas.MatMulPanels(ctx, g, ab, bb, step)
		if perr != nil {
			return nil, true, perr
		}
		out, err = deviceArray(dev, ps, a.n.Chunks[0], b.n.Chunks[1])
	} else {
		vals := make([]float64, sa[0]*sb[1])
		if err := blas.MatMulBlocks(ctx, g, ab, bb, vals, step); err != nil {
			return nil, true, err
		}
		out, err = dataArray(vals, []int{sa[0], sb[1]}, [][]int{a.n.Chunks[0], b.n.Chunks[1]})
	}
	prog.OK = err == nil
	return out, true, err
}

// svdOnDevice computes the SVD of a tall-and-skinny a (one column of chunks, rows >= columns)
// with its blocks generated on the GPU (or already held there) and TSQR done there
// (blas.Kernels.TallSVD), as one leaf where memory allows, else leaves of a quarter of the
// rows: on the GPU fewer, taller QRs are cheaper than a deeper tree. U stays on the device
// where it fits besides the work, else it comes to the host. Where that does not apply here
// (tallBlocks) it computes nothing and says why; the caller runs the TSQR block by block and
// Path says so. err is a failure of the device work, for the caller to return.
func (c *linalgConfig) svdOnDevice(ctx context.Context, k *blas.Kernels, a *Array) (out *SVDResult, why string, err error) {
	in, why, err := c.tallBlocks(ctx, k.Device(), a, "SVD", false)
	if in == nil {
		return nil, why, err
	}
	defer in.free()
	s, dev := a.n.Shape, in.dev
	r, err := k.TallSVD(ctx, in.blocks, in.leafRows, in.keep)
	if err != nil {
		return nil, "", fmt.Errorf("TSQR of %s on GPU %d: %w", expr.ShapeString(s), dev.Info.Index, err)
	}
	if !in.keep {
		out, err := svdArrays(&r.SVDResult, a, c)
		return out, "", err
	}
	u, err := deviceArray(dev, r.UBlocks.Ptr, a.n.Chunks[0], []int{s[1]})
	if err != nil {
		return nil, "", fmt.Errorf("left singular vectors: %w", err)
	}
	out, err = svdArrays(&r.SVDResult, a, c, u)
	return out, "", err
}

// tallInput is a tall-and-skinny matrix put on a GPU for a TSQR there (tallBlocks): its
// blocks on dev (free gives what was put there back), the rows of the TSQR's leaves, and
// whether the left factor (U, Q) stays on the device.
type tallInput struct {
	dev      *cuda.Device
	blocks   blas.Blocks
	free     func()
	leafRows int
	keep     bool
}

// tallBlocks is the set-up svdOnDevice and qrOnDevice share (what names which, for the
// trace): the TSQR's leaves and where its left factor stays (tallOnDevice), and a's blocks put
// on dev (blocksOnDevice), the left factor kept there where needKeep. Where a device TSQR does
// not apply it returns a nil input and why: a is not tall-and-skinny (tallSkinny), the work
// does not fit in the pool (or, needKeep, not with the factor kept), or a's last stage is not
// a GPU kernel. err (a nil input, why "") is a failure of the device or of a's earlier stages.
func (c *linalgConfig) tallBlocks(ctx context.Context, dev *cuda.Device, a *Array, what string, needKeep bool) (in *tallInput, why string, err error) {
	if why := tallSkinny(a.n); why != "" {
		return nil, why, nil
	}
	s := a.n.Shape
	input, free := deviceBytes(a.n, dev), available(ctx, dev)*9/10
	leafRows, keep, fits := tallOnDevice(a.n.Chunks[0], s[1], input, free)
	switch {
	case !fits:
		return nil, fmt.Sprintf("the work does not fit in GPU %d's free memory (%d bytes)", dev.Info.Index, free), nil
	case needKeep && !keep:
		return nil, fmt.Sprintf("the left factor does not fit in GPU %d's free memory (%d bytes) besides the work", dev.Info.Index, free), nil
	}
	t0 := time.Now()
	ab, freeA, ok, err := c.blocksOnDevice(ctx, dev, a.n)
	if err != nil {
		return nil, "", fmt.Errorf("%s input %s on GPU %d: %w", what, expr.ShapeString(s), dev.Info.Index, err)
	}
	if !ok {
		return nil, "its chunks are not generated on the device (the last stage is not one elementwise float64 GPU kernel with a task per chunk)", nil
	}
	cuda.Trace("%s input %s on GPU %d: %.3f s", what, expr.ShapeString(s), dev.Info.Index, time.Since(t0).Seconds())
	return &tallInput{dev: dev, blocks: ab, free: freeA, leafRows: leafRows, keep: keep}, "", nil
}

// tallSkinny says why 2-d node n is not a tall-and-skinny matrix for a device TSQR
// (tallBlocks), or "" when it is: one column of chunks, at least as many rows as columns,
// and some columns. It needs no GPU.
func tallSkinny(n *expr.Node) string {
	s := n.Shape
	switch {
	case len(s) != 2:
		return fmt.Sprintf("an array of shape %s is not a matrix", expr.ShapeString(s))
	case len(n.Chunks[1]) != 1:
		return fmt.Sprintf("%d column chunks, not one", len(n.Chunks[1]))
	case s[0] < s[1]:
		return fmt.Sprintf("shape %s has fewer rows than columns", expr.ShapeString(s))
	case s[1] == 0:
		return "no columns"
	}
	return ""
}

// tallOnDevice decides how a TSQR of a tall-and-skinny matrix (row chunks rowChunks, cols
// columns) runs on a GPU with free bytes for it, its input taking input bytes there (none when
// held there already): one leaf (no tree) where it fits, else leaves of a quarter of the
// rows, and whether U (SVD) or Q (QR) stays on the device (keep), which matters more than the
// leaf size: a host copy of U costs more than the tree (8 GB took about 1.1 s to come to the
// host on the H100). On the H100, with the input and U on the device, 1,000,000 x 1000 took
// 0.429 s as one leaf, 0.475 s as two, 0.513 s as four and 0.711 s as ten (blas
// TestTallSVDLeavesTime), and 10000 x 1000 0.112 s as one leaf against 0.127-0.160 s as
// leaves of 2000-5000 rows. ok is false when neither fits.
func tallOnDevice(rowChunks []int, cols int, input, free uint64) (leafRows int, keep, ok bool) {
	rows := 0
	for _, r := range rowChunks {
		rows += r
	}
	bl := blas.Blocks{Grid: linalg.Grid{RowChunks: rowChunks, ColChunks: []int{cols}}}
	uBytes := uint64(rows) * uint64(cols) * 8 * 9 / 8 // U's blocks, rounded up to the pool's classes
	fits := func(leafRows int, keep bool) bool {
		need := input + blas.TallSVDBytes(bl, leafRows, keep)
		if keep {
			need += uBytes
		}
		return need <= free
	}
	quarter := max(2*cols, (rows+3)/4)
	switch {
	case fits(rows, true):
		return rows, true, true
	case fits(quarter, true):
		return quarter, true, true
	case fits(rows, false):
		return rows, false, true
	case fits(quarter, false):
		return quarter, false, true
	}
	return 0, false, false
}

// qrOnDevice computes the QR of a tall-and-skinny a (one column of chunks, rows >= columns)
// as svdOnDevice does its SVD (blas.Kernels.TallQR), Q left on the device in a's row chunks
// and R (columns x columns) uploaded beside it, so later stages read both in place. Where
// that does not apply here (tallBlocks: also where Q does not fit on the device besides the
// work) it computes nothing and says why; err is a failure of the device work.
func (c *linalgConfig) qrOnDevice(ctx context.Context, k *blas.Kernels, a *Array) (out *QRResult, why string, err error) {
	in, why, err := c.tallBlocks(ctx, k.Device(), a, "QR", true)
	if in == nil {
		return nil, why, err
	}
	defer in.free()
	s, dev := a.n.Shape, in.dev
	r, err := k.TallQR(ctx, in.blocks, in.leafRows)
	if err != nil {
		return nil, "", fmt.Errorf("TSQR of %s on GPU %d: %w", expr.ShapeString(s), dev.Info.Index, err)
	}
	q, err := deviceArray(dev, r.QBlocks.Ptr, a.n.Chunks[0], []int{s[1]})
	if err != nil {
		return nil, "", fmt.Errorf("the Q factor: %w", err)
	}
	var rp driver.DevicePtr
	err = dev.Do(ctx, func() error {
		var err error
		if rp, err = dev.Pool().Alloc(uint64(len(r.R.Data)) * 8); err != nil {
			return err
		}
		return dev.CopyToDevice(rp, r.R.Data)
	})
	if err != nil {
		if rp != 0 {
			_ = dev.Do(context.Background(), func() error { dev.Pool().Free(rp); return nil })
		}
		return nil, "", fmt.Errorf("the R factor to GPU %d: %w", dev.Info.Index, err)
	}
	ra, err := deviceArray(dev, []driver.DevicePtr{rp}, []int{s[1]}, []int{s[1]})
	if err != nil {
		return nil, "", fmt.Errorf("the R factor: %w", err)
	}
	return &QRResult{Q: q, R: ra, Path: c.path(r.Kernels)}, "", nil
}

// deviceBytes returns the device memory n's blocks take when put on dev: none when n is held
// there already.
func deviceBytes(n *expr.Node, dev *cuda.Device) uint64 {
	if b, ok := n.Buf.(*deviceBuffer); ok && b.dev == dev {
		return 0
	}
	if g, ok := n.Buf.(*gpuChunks); ok && g.inPlaceOn(dev) {
		return 0
	}
	return uint64(expr.Size(n.Shape)) * 8
}

// available returns the device memory the pool may still hand out (read on the device's
// goroutine, which owns the pool); 0 when ctx ends first.
func available(ctx context.Context, dev *cuda.Device) uint64 {
	var n uint64
	_ = dev.Do(ctx, func() error { n = dev.Pool().Available(); return nil })
	return n
}

// blocksOnDevice puts the chunks of the 2-d node n on dev: an array held there already (a
// result kept there, float64 chunks persisted there) is used in place, other data held on a
// GPU (float32 in 4-byte floats) is copied by a fused kernel reading it where it is held,
// host data is uploaded chunk by chunk; a computed node has its earlier stages (reductions it
// reads) computed as usual and its last, elementwise stage run on dev with the outputs left
// there.
func (c *linalgConfig) blocksOnDevice(ctx context.Context, dev *cuda.Device, n *expr.Node) (blas.Blocks, func(), bool, error) {
	rc, cc := n.Chunks[0], n.Chunks[1]
	bl := blas.Blocks{Grid: linalg.Grid{RowChunks: rc, ColChunks: cc}, Ptr: make([]driver.DevicePtr, len(rc)*len(cc))}
	ro, co := linalg.Offsets(rc), linalg.Offsets(cc)
	if b, ok := n.Buf.(*deviceBuffer); ok && b.dev == dev {
		if held, done, ok := b.blocks(cc); ok {
			return held, done, true, nil
		}
	}
	if g, ok := n.Buf.(*gpuChunks); ok {
		if held, done, ok := g.blocksOn(dev); ok {
			return held, done, true, nil
		}
	}
	// Data held on a GPU otherwise (4-byte floats, another GPU) is read by the fused kernel
	// below, where it is held or, named in Path, from host memory; other data is uploaded.
	if _, onGPU := n.Buf.(onDevice); n.Kind == expr.KData && !onGPU {
		vals, err := n.Values()
		if err != nil {
			return bl, nil, false, err
		}
		return uploadChunks(ctx, dev, vals.ToFloat64(), n.Shape[1], rc, cc)
	}
	order := plan.Order(n) // empty for data held on a GPU: its one stage copies it
	done := map[*expr.Node]dtype.Slice{}
	if len(order) > 0 {
		if err := c.runStages(ctx, order[:len(order)-1], done); err != nil {
			return bl, nil, false, err
		}
	}
	t0 := time.Now()
	st, err := plan.Lower(max(len(order)-1, 0), n, done, plan.Options{MemoryLimit: c.memLimit, Held: heldOn(dev)})
	if err != nil {
		return bl, nil, false, err
	}
	if st.Kernel.Reduce != nil || len(st.Tasks) != len(bl.Ptr) {
		return bl, nil, false, nil
	}
	if _, _, err := cuda.Lower(st.Kernel); err != nil {
		return bl, nil, false, nil // not a GPU kernel (a range leaf, say)
	}
	if dt := st.Kernel.Instrs[st.Kernel.Result].DType; dt.IsInteger() || dt.IsComplex() {
		return bl, nil, false, nil // the kernel's words are not float64 (cuda.EncodeWords)
	}
	// Each task must be exactly one chunk.
	slot := make([]int, len(st.Tasks))
	for t, task := range st.Tasks {
		i, j := indexOf(ro, task.Offset[0]), indexOf(co, task.Offset[1])
		if i < 0 || j < 0 || task.Shape[0] != rc[i] || task.Shape[1] != cc[j] {
			return bl, nil, false, nil
		}
		slot[t] = i*len(cc) + j
	}
	if g, ok := c.sched.(*gpuSched); ok {
		g.planSteps(st, t0)
	}
	ptrs, free, err := cuda.RunPlanKeep(ctx, dev, st.Tasks)
	if err != nil {
		return bl, nil, false, err
	}
	for t, p := range ptrs {
		bl.Ptr[slot[t]] = p
	}
	return bl, free, true, nil
}

// indexOf returns i with offs[i] == v, or -1.
func indexOf(offs []int, v int) int {
	for i, o := range offs[:len(offs)-1] {
		if o == v {
			return i
		}
	}
	return -1
}

// uploadChunks copies the chunks of a row-major matrix (cols columns) to dev, one device
// block per chunk.
func uploadChunks(ctx context.Context, dev *cuda.Device, data []float64, cols int, rc, cc []int) (blas.Blocks, func(), bool, error) {
	bl := blas.Blocks{Grid: linalg.Grid{RowChunks: rc, ColChunks: cc}, Ptr: make([]driver.DevicePtr, len(rc)*len(cc))}
	var allocated []driver.DevicePtr
	free := func() {
		_ = dev.Do(context.Background(), func() error {
			for _, p := range allocated {
				dev.Pool().Free(p)
			}
			return nil
		})
	}
	r0 := 0
	for i, r := range rc {
		c0 := 0
		for j, w := range cc {
			blk := make([]float64, max(r*w, 1))
			for k := 0; k < r; k++ {
				copy(blk[k*w:(k+1)*w], data[(r0+k)*cols+c0:(r0+k)*cols+c0+w])
			}
			err := dev.Do(ctx, func() error {
				p, err := dev.Pool().Alloc(uint64(len(blk)) * 8)
				if err != nil {
					return err
				}
				allocated = append(allocated, p)
				bl.Ptr[i*len(cc)+j] = p
				return dev.CopyToDevice(p, blk)
			})
			if err != nil {
				free()
				return bl, nil, false, fmt.Errorf("upload chunk (%d, %d): %w", i, j, err)
			}
			c0 += w
		}
		r0 += r
	}
	return bl, free, true, nil
}

// rechunkOf returns the node a rechunk view reads (n itself for any other node).
func rechunkOf(n *expr.Node) *expr.Node {
	if n.Kind != expr.KView || len(n.Args) != 1 || len(n.Map) != len(n.Shape) || !slices.Equal(n.Shape, n.Args[0].Shape) {
		return n
	}
	for k, m := range n.Map {
		if m != (expr.AxisMap{Axis: k, Step: 1}) {
			return n
		}
	}
	return n.Args[0]
}

// lazyProduct returns the operands of n when n is a lazy product of two float64 matrices
// (MatMul(a, b) as productNode builds it: a rechunked to one column chunk, one product node
// per column chunk of b joined along the columns) whose chunks are those of matmulOnDevice's
// result: a's row chunks, b's column chunks (anyChunks: whatever n's chunks, for values read
// row-major). For one product node that reads a panel of b's columns, b is that panel.
func lazyProduct(n *expr.Node, anyChunks bool) (a, b *expr.Node, ok bool) {
	p := rechunkOf(n)
	switch {
	case p.Kind == expr.KConcat:
		a, b, ok = panelProducts(p)
	case isProduct(p):
		a, b, ok = productA(p), p.Args[1], true
		if c := p.Call; len(b.Shape) == 2 && (c.Off != 0 || c.N != b.Shape[1]) {
			var err error
			b, err = expr.NewSlice(b, []expr.Index{{Step: 1}, {Start: c.Off, Stop: c.Off + c.N, Step: 1, HasStart: true, HasStop: true}})
			ok = err == nil
		}
	}
	if !ok || len(a.Shape) != 2 || len(b.Shape) != 2 || len(n.Shape) != 2 || a.DType != dtype.Float64 || b.DType != dtype.Float64 || n.DType != dtype.Float64 {
		return nil, nil, false
	}
	if !slices.Equal(a.Chunks[1], b.Chunks[0]) || !anyChunks && (!slices.Equal(n.Chunks[0], a.Chunks[0]) || !slices.Equal(n.Chunks[1], b.Chunks[1])) {
		return nil, nil, false
	}
	return a, b, true
}

// isProduct reports whether p is a product node (expr.NewMatMul).
func isProduct(p *expr.Node) bool {
	return p.Kind == expr.KCall && p.Call != nil && p.Call.Fn == expr.FnMatMul && len(p.Args) == 2
}

// panelProducts returns the operands of a join along the columns of products of one a with
// consecutive column panels of one b (productNode) that together cover all of b.
func panelProducts(p *expr.Node) (a, b *expr.Node, ok bool) {
	if len(p.Axes) != 1 || p.Axes[0] != 1 || len(p.Args) == 0 {
		return nil, nil, false
	}
	c0 := 0
	for _, x := range p.Args {
		if !isProduct(x) {
			return nil, nil, false
		}
		if a == nil {
			a, b = x.Args[0], x.Args[1]
		}
		if x.Args[0] != a || x.Args[1] != b || x.Call.Off != c0 {
			return nil, nil, false
		}
		c0 += x.Call.N
	}
	if len(b.Shape) != 2 || c0 != b.Shape[1] {
		return nil, nil, false
	}
	return productA(p.Args[0]), b, true
}

// productA returns the a of the product node p with the column chunks it had before
// productNode rechunked it to one (Call.Blocks[0]): the node it rechunked where that is a
// node of its own, else (a view, such as a transpose, which the rechunk folded into one view)
// a rechunk of p's operand back to them.
func productA(p *expr.Node) *expr.Node {
	a := rechunkOf(p.Args[0])
	want := p.Call.Blocks
	if len(want) != 3 || len(a.Shape) != 2 || slices.Equal(a.Chunks[1], want[0]) {
		return a
	}
	if r, err := expr.NewRechunk(p.Args[0], [][]int{a.Chunks[0], want[0]}); err == nil {
		return r
	}
	return a
}

// productOnGPU computes the lazy product n (lazyProduct) with one GPU scheduler as MatMul with
// OnGPU does: the operands' blocks generated on the device, one cublasDgemm per row panel, C
// kept on the device. It returns nil (and the caller plans n as a call stage) for other nodes
// and schedulers, without cuBLAS, or when the operands and C do not fit (matmulOnDevice).
func productOnGPU(cfg computeConfig, n *expr.Node, anyChunks bool) (*Array, error) {
	g, ok := cfg.sched.(*gpuSched)
	if !ok || len(g.devs) != 1 {
		return nil, nil
	}
	a, b, ok := lazyProduct(n, anyChunks)
	if !ok {
		return nil, nil
	}
	idx := g.devs[0].Info.Index
	var k blas.DeviceGemm
	lib := cuda.CallLibrary(expr.FnMatMul)
	if cb, err := blas.New(idx); err == nil {
		k = cb
	} else if own, oerr := blas.NewOwn(idx, linalg.CPU()); oerr == nil {
		// Without cuBLAS (GPUNOTES_CUBLAS=off) the product runs on the own GEMM kernel.
		k, lib = own, "the own GEMM kernel (cuBLAS unavailable: "+err.Error()+")"
	} else {
		return nil, nil // the call stage runs it, and its Path says why
	}
	c := &linalgConfig{computeConfig: cfg}
	t0 := time.Now()
	out, ok, err := c.matmulOnDevice(cfg.ctx, k, &Array{n: a}, &Array{n: b})
	if err != nil {
		return nil, fmt.Errorf("MatMul of %s and %s: %w", expr.ShapeString(a.Shape), expr.ShapeString(b.Shape), err)
	}
	if !ok {
		return nil, nil
	}
	cuda.Trace("lazy product %s x %s on gpu %d: %.4f s", expr.ShapeString(a.Shape), expr.ShapeString(b.Shape), g.devs[0].Info.Index, time.Since(t0).Seconds())
	g.libStep(fmt.Sprintf("%v on %s (operands generated on the device)", expr.FnMatMul, lib))
	out.path = g.path()
	if w := out.Where(); w != "host" {
		out.path += "; result kept on " + w
	}
	return out, nil
}

// productValues computes a product that a later stage reads (a call stage of order) on one GPU
// as productOnGPU does and returns its values in host memory, row-major, for that stage: the
// operands and C never pass through host memory in pieces (y's stage assembled there, copied
// to the GPU for the call, C's panels brought back and assembled). ok is false when
// productOnGPU does not take n.
func productValues(cfg computeConfig, n *expr.Node) (vals dtype.Slice, ok bool, err error) {
	p, err := productOnGPU(cfg, n, true)
	if err != nil || p == nil {
		return dtype.Slice{}, false, err
	}
	defer p.Release() // its GPU memory goes as soon as the values are copied
	v, err := p.n.Values()
	if err != nil {
		return dtype.Slice{}, true, fmt.Errorf("MatMul: %w", err)
	}
	vals = v.Clone() // Go memory: p's host copy goes with p
	runtime.KeepAlive(p)
	return vals, true, nil
}

// productOperands returns the nodes of order that only lazy products on one GPU read, as their
// b: productValues generates b's blocks (or a panel's) on the device itself, so a stage that
// assembles b in host memory first is wasted (runOrder computes it only when a product falls
// back to the call stage). Nodes that roots are or read stay.
func productOperands(cfg computeConfig, order, roots []*expr.Node) map[*expr.Node]bool {
	g, ok := cfg.sched.(*gpuSched)
	if !ok || len(g.devs) != 1 {
		return nil
	}
	inOrder := map[*expr.Node]bool{}
	for _, n := range order {
		inOrder[n] = true
	}
	var skip map[*expr.Node]bool
	for _, n := range order {
		if _, _, ok := lazyProduct(n, true); !ok {
			continue
		}
		b := n.Args[1]
		if !inOrder[b] || slices.Contains(roots, b) || readBesides(b, append(slices.Clone(order), roots...), inOrder) {
			continue
		}
		if skip == nil {
			skip = map[*expr.Node]bool{}
		}
		skip[b] = true
	}
	return skip
}

// readBesides reports whether a node of nodes other than b and the products of b reads b:
// within its own stage, walking its graph down to the nodes that order materializes
// (inOrder), which are read from memory.
func readBesides(b *expr.Node, nodes []*expr.Node, inOrder map[*expr.Node]bool) bool {
	for _, o := range nodes {
		if o == b || isProduct(o) && o.Args[1] == b {
			continue
		}
		seen := map[*expr.Node]bool{}
		var reads func(x *expr.Node) bool
		reads = func(x *expr.Node) bool {
			for _, a := range x.Args {
				if a == b {
					return true
				}
				if inOrder[a] || seen[a] {
					continue
				}
				seen[a] = true
				if reads(a) {
					return true
				}
			}
			return false
		}
		if reads(o) {
			return true
		}
	}
	return false
}

// productsOnGPU computes, with one GPU scheduler, the lazy products that the roots' graphs read
// (not roots themselves: computeArrays computes those with productOnGPU) as a root product is
// computed, and returns the roots rebuilt to read them where they are held: the kernels after
// a product read it in place on the device, where its panels would otherwise come to host
// memory for the stages that read them. release gives their device memory back. A product
// that does not fit stays in the graph (its panels run as productValues or call stages).
func productsOnGPU(cfg computeConfig, roots []*expr.Node) (out []*expr.Node, release func(), err error) {
	if g, ok := cfg.sched.(*gpuSched); !ok || len(g.devs) != 1 {
		return roots, func() {}, nil
	}
	var held []*Array
	release = func() {
		for _, p := range held {
			p.Release()
		}
	}
	out, err = substituteProducts(roots, func(n *expr.Node) (*expr.Node, error) {
		p, err := productOnGPU(cfg, n, false)
		if err != nil || p == nil {
			return nil, err
		}
		held = append(held, p)
		return p.n, nil
	})
	if err != nil {
		release()
		return nil, nil, err
	}
	return out, release, nil
}

// substituteProducts rebuilds the roots' graphs with each whole lazy product below them
// (lazyProduct with its own chunks; not a panel product of a join, nor a root) replaced by the
// node compute gives (of the same shape, chunks and dtype), or kept where it gives nil.
func substituteProducts(roots []*expr.Node, compute func(*expr.Node) (*expr.Node, error)) ([]*expr.Node, error) {
	isRoot := map[*expr.Node]bool{}
	for _, r := range roots {
		isRoot[r] = true
	}
	memo := map[*expr.Node]*expr.Node{}
	var rebuild func(n *expr.Node) (*expr.Node, error)
	rebuild = func(n *expr.Node) (*expr.Node, error) {
		if r, ok := memo[n]; ok {
			return r, nil
		}
		whole := n.Kind == expr.KConcat || isProduct(n) && n.Call.Off == 0 && len(n.Args[1].Shape) == 2 && n.Call.N == n.Args[1].Shape[1]
		if _, _, ok := lazyProduct(n, false); ok && whole && !isRoot[n] {
			r, err := compute(n)
			if err != nil {
				return nil, err
			}
			if r != nil {
				memo[n] = r
				return r, nil
			}
		}
		var args []*expr.Node
		for i, a := range n.Args {
			x, err := rebuild(a)
			if err != nil {
				return nil, err
			}
			if x != a && args == nil {
				args = slices.Clone(n.Args)
			}
			if args != nil {
				args[i] = x
			}
		}
		r := n
		if args != nil {
			c := *n
			c.Args = args
			r = &c
		}
		memo[n] = r
		return r, nil
	}
	out := make([]*expr.Node, len(roots))
	for i, r := range roots {
		var err error
		if out[i], err = rebuild(r); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// onDevice is a buffer held in GPU memory: a result kept there (deviceBuffer) or an array
// persisted there (gpuChunks).
type onDevice interface{ onGPU() }

func (*deviceBuffer) onGPU() {}
func (*gpuChunks) onGPU()    {}

// inPlaceOn reports whether g's chunks are float64 matrix blocks all held on dev, which a
// product reads where they are (blocksOn).
func (g *gpuChunks) inPlaceOn(dev *cuda.Device) bool {
	if g.dt != dtype.Float64 || g.narrow || len(g.grid.shape) != 2 {
		return false
	}
	for _, d := range g.devs {
		if d != dev {
			return false
		}
	}
	return true
}

// blocksOn returns g's chunks as device blocks on dev, read in place (each chunk is a packed
// row-major block of float64s, chunks in row-major order), pinned until done is called; ok is
// false when they are not all on dev (inPlaceOn), once released, or for an empty chunk.
func (g *gpuChunks) blocksOn(dev *cuda.Device) (bl blas.Blocks, done func(), ok bool) {
	if !g.inPlaceOn(dev) || !g.pin() {
		return bl, nil, false
	}
	bl = blas.Blocks{Grid: linalg.Grid{RowChunks: g.grid.chunks[0], ColChunks: g.grid.chunks[1]}, Ptr: make([]driver.DevicePtr, len(g.devs))}
	for i := range bl.Ptr {
		if bl.Ptr[i] = g.ptr(i); bl.Ptr[i] == 0 {
			g.unpin()
			return bl, nil, false
		}
	}
	return bl, g.unpin, true
}
