package gpuarray

import (
	"context"
	"errors"
	"fmt"
	"html"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/blas"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
	"github.com/gpunotes/gpunotes/gpuarray/linalg/openblas"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// linalgConfig is a Compute configuration as the linear algebra uses it: blocks of the inputs
// are computed with its scheduler (Inline unless one is given, since the linear algebra already
// works on several blocks at once).
type linalgConfig struct {
	computeConfig
	opt linalg.Options
	// gpuFallback says why GPU kernels were asked for but not used.
	gpuFallback string
	// cublasMissing says why the own GEMM kernel runs instead of cuBLAS.
	cublasMissing string
	// hostTSQR says why a QR or SVD on a GPU runs its TSQR block by block, its blocks
	// through host memory, instead of wholly on the device (tsqrThroughHost).
	hostTSQR string
}

func newLinalgConfig(opts []ComputeOption) (*linalgConfig, error) {
	c := &linalgConfig{}
	for _, o := range withDefaults(opts) {
		if o != nil {
			o(&c.computeConfig)
		}
	}
	if c.schedErr != nil {
		return nil, c.schedErr
	}
	if c.sched == nil {
		c.sched = engine.Inline{}
	}
	// On the GPU backend the dense block work goes to cuBLAS/cuSOLVER when they load; without
	// them, and on the CPU, it goes to OpenBLAS when it loads, else to gonum. The result's
	// Path says which ran.
	// Without cuBLAS, products run on the own GEMM kernel and QR/SVD on the CPU kernels.
	cpu := linalg.CPU()
	if k, err := openblas.New(); err == nil {
		cpu = k
	}
	c.opt.Kernels = cpu
	if g, ok := c.sched.(*gpuSched); ok {
		idx := g.devs[0].Info.Index
		if k, err := blas.New(idx); err == nil {
			c.opt.Kernels = k
		} else if own, oerr := blas.NewOwn(idx, cpu); oerr == nil {
			c.opt.Kernels = own
			c.cublasMissing = err.Error()
		} else {
			c.gpuFallback = err.Error() + "; " + oerr.Error()
		}
	}
	if c.ctx == nil {
		c.ctx = display.Context()
	}
	if c.memLimit <= 0 {
		c.memLimit = engine.DefaultMemoryLimit()
	}
	return c, nil
}

// leafRows picks the rows of TSQR leaves for a rows x cols factorization. At least twice as
// many rows as columns: with square chunks the stacked R factors would be as large as the
// input (10000 x 1000 in chunks of 1000 x 1000, 2-core VM, gonum: 13.3 s with one leaf per
// chunk, 8.9 s with leaves of 2000 rows). Up to rows/workers rows, so each leaf's QR gets its
// share of the cores (same input, OpenBLAS: 1.83 s with leaves of 2000 rows, 1.57 s with 5000),
// but at most ten times the columns: taller leaves factor more slowly (200000 x 1000 in chunks
// of 20000, OpenBLAS, 2 cores: 32-35 s with one chunk per leaf, 37 s with two, 46 s with five,
// 53 s as one leaf). Leaves are whole chunks, so a chunk taller than that is one leaf.
func (c *linalgConfig) leafRows(rows, cols int) int {
	w := c.opt.Workers
	if w <= 0 {
		w = runtime.GOMAXPROCS(0)
	}
	return min(max(2*cols, (rows+w-1)/w), 10*cols)
}

// evalNode computes n (its reductions first) with the configuration's scheduler, without a
// progress bar, and returns its values row-major.
func (c *linalgConfig) evalNode(ctx context.Context, n *expr.Node) ([]float64, error) {
	if n.Kind == expr.KData {
		v, err := n.Values()
		if err != nil {
			return nil, err
		}
		return v.ToFloat64(), nil // linear algebra computes in float64
	}
	done := map[*expr.Node]dtype.Slice{}
	if err := c.runStages(ctx, plan.Order(n), done); err != nil {
		return nil, err
	}
	return done[n].ToFloat64(), nil
}

// runStages computes the nodes of order (a prefix of plan.Order's result) one stage each
// with the configuration's scheduler, into done.
func (c *linalgConfig) runStages(ctx context.Context, order []*expr.Node, done map[*expr.Node]dtype.Slice) error {
	for id, x := range order {
		t0 := time.Now()
		st, err := plan.Lower(id, x, done, planOptions(c.sched, c.memLimit))
		if err != nil {
			return err
		}
		if g, ok := c.sched.(*gpuSched); ok {
			g.planSteps(st, t0)
		}
		outs, err := c.sched.Run(ctx, st.Tasks, func(int) {})
		if err != nil {
			return err
		}
		if done[x], err = st.Assemble(outs); err != nil {
			return err
		}
	}
	return nil
}

// matrixOf returns a as a chunked matrix whose blocks are computed on demand: a 2-d array as
// it is, a 1-d array as one row (asRow) or one column. Computing a block computes only that
// block's part of a's expression, so random inputs are generated right before their use.
func (c *linalgConfig) matrixOf(a *Array, asRow bool) linalg.Matrix {
	n := a.n
	var g linalg.Grid
	switch {
	case len(n.Shape) == 2:
		g = linalg.Grid{RowChunks: n.Chunks[0], ColChunks: n.Chunks[1]}
	case asRow:
		g = linalg.Grid{RowChunks: []int{1}, ColChunks: n.Chunks[0]}
	default:
		g = linalg.Grid{RowChunks: n.Chunks[0], ColChunks: []int{1}}
	}
	ro, co := linalg.Offsets(g.RowChunks), linalg.Offsets(g.ColChunks)
	return linalg.Matrix{Grid: g, Block: func(ctx context.Context, i, j int) (linalg.Mat, error) {
		var ix []expr.Index
		span := func(lo, hi int) expr.Index {
			return expr.Index{Start: lo, Stop: hi, Step: 1, HasStart: true, HasStop: true}
		}
		switch {
		case len(n.Shape) == 2:
			ix = []expr.Index{span(ro[i], ro[i+1]), span(co[j], co[j+1])}
		case asRow:
			ix = []expr.Index{span(co[j], co[j+1])}
		default:
			ix = []expr.Index{span(ro[i], ro[i+1])}
		}
		whole := len(g.RowChunks) == 1 && len(g.ColChunks) == 1
		node := n
		if !whole || n.Kind != expr.KData {
			s, err := expr.NewSlice(n, ix)
			if err != nil {
				return linalg.Mat{}, err
			}
			node = s
		}
		vals, err := c.evalNode(ctx, node)
		if err != nil {
			return linalg.Mat{}, err
		}
		if node == n { // a's own data: the caller may overwrite the block
			vals = append([]float64(nil), vals...)
		}
		return linalg.Mat{Rows: g.RowChunks[i], Cols: g.ColChunks[j], Data: vals}, nil
	}}
}

// dataArray wraps computed values as an array.
func dataArray(vals []float64, shape []int, chunks [][]int) (*Array, error) {
	n, err := expr.NewData(dtype.OfFloat64(vals), shape, chunks)
	if err != nil {
		return nil, err
	}
	return &Array{n: n}, nil
}

// MatMul returns the matrix product of a and b: 2-d by 2-d, or with a 1-d operand as in NumPy
// (a vector on the left is a row, on the right a column, and its axis is dropped from the
// result). It is lazy, a node in the graph like any other: Compute schedules it, elementwise
// work on the operands fuses into the product's tasks and work on the result fuses after it.
// Each task computes one row chunk of a (all of the inner axis) against one column chunk of b
// (a panel, computed before the task), summing the products of the blocks along the inner axis
// in a fixed order (the CPU gives the bits of the blocked product, OpenBLAS or gonum; a GPU
// runs cuBLAS), so no task holds more of b than a column chunk: chunk b's columns to bound it.
// The result is chunked by a's row chunks and b's column chunks. On one GPU, where the
// operands and the product fit in its memory, the operands are generated there and the
// product is kept there (Where, Release). Shapes that do not align, and complex operands, are
// an error kept in the array (Err, Compute).
func MatMul(a, b *Array) *Array {
	for _, x := range []*Array{a, b} {
		if err := x.Err(); err != nil {
			return errArray(err)
		}
	}
	sa, sb := a.n.Shape, b.n.Shape
	if len(sa) < 1 || len(sa) > 2 || len(sb) < 1 || len(sb) > 2 {
		return errArray(fmt.Errorf("MatMul: shapes %s and %s: want 1-d or 2-d operands", expr.ShapeString(sa), expr.ShapeString(sb)))
	}
	if ka, kb := sa[len(sa)-1], sb[0]; ka != kb {
		return errArray(fmt.Errorf("MatMul: shapes %s and %s not aligned: %d (dim %d) != %d (dim 0)", expr.ShapeString(sa), expr.ShapeString(sb), ka, len(sa)-1, kb))
	}
	for _, x := range []*Array{a, b} {
		if x.DType().Kind() == dtype.KindComplex {
			return errArray(fmt.Errorf("MatMul: complex matrices are not supported yet"))
		}
	}
	a2, b2 := a, b
	if len(sa) == 1 {
		a2 = ExpandDims(a, 0)
	}
	if len(sb) == 1 {
		b2 = ExpandDims(b, 1)
	}
	p, err := productNode(a2.n, b2.n)
	if err != nil {
		return errArray(fmt.Errorf("MatMul: %w", err))
	}
	out := &Array{n: p}
	switch {
	case len(sa) == 1 && len(sb) == 1:
		out = out.Squeeze(0, 1)
	case len(sa) == 1:
		out = out.Squeeze(0)
	case len(sb) == 1:
		out = out.Squeeze(1)
	}
	return out
}

// Dot returns the matrix product a·b (see MatMul).
func (a *Array) Dot(b *Array) *Array { return MatMul(a, b) }

// productNode builds the product of the 2-d nodes a and b: a rechunked to one chunk along the
// inner axis, and one product node (expr.NewMatMul) per column chunk of b, whose tasks are
// given only that panel of b, joined along the columns. Each panel's values are those of its
// column chunk in the blocked product (linalg.PanelProduct sums each column chunk on its own).
func productNode(an, bn *expr.Node) (*expr.Node, error) {
	k := an.Shape[1]
	inner := [][]int{slices.Clone(an.Chunks[1]), slices.Clone(bn.Chunks[0])}
	if len(an.Chunks[1]) != 1 {
		var err error
		if an, err = expr.NewRechunk(an, [][]int{an.Chunks[0], {k}}); err != nil {
			return nil, err
		}
	}
	cols := bn.Chunks[1]
	panels := make([]*expr.Node, len(cols))
	c0 := 0
	for j, w := range cols {
		var err error
		if panels[j], err = expr.NewMatMul(an, bn, c0, w, append(slices.Clone(inner), []int{w}), Float64); err != nil {
			return nil, err
		}
		c0 += w
	}
	return expr.NewConcat(panels, 1)
}

// QRResult is the result of QR: Q (m x k, orthonormal columns) and R (k x n, upper
// triangular), k = min(m, n), and the kernels that ran.
type QRResult struct {
	Q, R *Array
	Path string
}

// SVDResult is the result of SVD and SVDCompressed: U (m x k), S (k singular values,
// descending) and V (k x n, the right singular vectors as rows, like NumPy's Vh), with
// A ≈ U·diag(S)·V, and the kernels that ran. Signs are normalized: the largest entry of each
// row of V is positive.
type SVDResult struct {
	U, S, V *Array
	Path    string
}

func check2D(what string, a *Array) error {
	if err := a.Err(); err != nil {
		return err
	}
	if len(a.n.Shape) != 2 {
		return fmt.Errorf("%s needs a 2-d array, got shape %s", what, expr.ShapeString(a.n.Shape))
	}
	return nil
}

// rechunkHint says how to give a one column of chunks.
func rechunkHint(a *Array) string {
	m, n := a.n.Shape[0], a.n.Shape[1]
	rc := a.n.Chunks[0][0]
	if rc == 0 {
		rc = m
	}
	return fmt.Sprintf("rechunk to one column of chunks first, for example a.Rechunk(%d, %d)", max(rc, 1), n)
}

// QR returns the QR factorization of a tall-and-skinny array with a single column of chunks,
// by TSQR: a QR per row chunk, then QRs of the stacked R factors up a fixed tree. The inputs'
// chunks are computed block by block with opts (like Compute). On a GPU, where Q fits there
// besides the work, the whole TSQR runs on the device and Q and R are held there (read in
// place by later computations, copied to the host when asked for).
func QR(a *Array, opts ...ComputeOption) (*QRResult, error) {
	if err := check2D("QR", a); err != nil {
		return nil, err
	}
	defer pinGraph(a.n)()
	if len(a.n.Chunks[1]) != 1 {
		return nil, fmt.Errorf("QR of shape %s with chunks %s: TSQR needs a single column of chunks; %s",
			expr.ShapeString(a.n.Shape), chunksString(a.n.Chunks), rechunkHint(a))
	}
	c, err := newLinalgConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("QR: %w", err)
	}
	if k, ok := c.opt.Kernels.(*blas.Kernels); ok {
		// On a GPU: TSQR there, Q and R left there (issue 32: a call's outputs stay on the
		// device), where Q fits besides the work.
		r, why, err := c.qrOnDevice(c.ctx, k, a)
		if err != nil {
			return nil, fmt.Errorf("QR: %w", err)
		}
		if why == "" {
			return r, nil
		}
		c.tsqrThroughHost("QR", why)
	}
	c.opt.LeafRows = c.leafRows(a.n.Shape[0], a.n.Shape[1])
	q, err := linalg.TSQR(c.ctx, c.matrixOf(a, false), c.opt)
	if err != nil {
		return nil, fmt.Errorf("QR: %w", err)
	}
	defer q.Release()
	qm, err := q.Q(c.ctx)
	if err != nil {
		return nil, fmt.Errorf("QR: %w", err)
	}
	k := q.K()
	qa, err := dataArray(qm.Data, []int{qm.Rows, k}, [][]int{a.n.Chunks[0], {k}})
	if err != nil {
		return nil, fmt.Errorf("QR: %w", err)
	}
	ra, err := dataArray(q.R.Data, []int{k, q.R.Cols}, [][]int{{k}, {q.R.Cols}})
	if err != nil {
		return nil, fmt.Errorf("QR: %w", err)
	}
	return &QRResult{Q: qa, R: ra, Path: c.path(q.Kernels)}, nil
}

// SVD returns the thin SVD of a 2-d array with a single column of chunks (tall-and-skinny: TSQR,
// then the SVD of R) or a single row of chunks (short-and-fat: through the transpose). Arrays
// chunked along both axes get an error that points to SVDCompressed. full_matrices is not
// supported. U keeps a's row chunks, V its column chunks.
func SVD(a *Array, opts ...ComputeOption) (*SVDResult, error) {
	if err := check2D("SVD", a); err != nil {
		return nil, err
	}
	defer pinGraph(a.n)()
	c, err := newLinalgConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("SVD: %w", err)
	}
	if k, ok := c.opt.Kernels.(*blas.Kernels); ok {
		r, why, err := c.svdOnDevice(c.ctx, k, a)
		if err != nil {
			return nil, fmt.Errorf("SVD: %w", err)
		}
		if why == "" {
			return r, nil
		}
		if len(a.n.Chunks[0]) == 1 || len(a.n.Chunks[1]) == 1 { // else linalg.SVD says to use SVDCompressed
			c.tsqrThroughHost("SVD", why)
		}
	}
	c.opt.LeafRows = c.leafRows(max(a.n.Shape[0], a.n.Shape[1]), min(a.n.Shape[0], a.n.Shape[1]))
	r, err := linalg.SVD(c.ctx, c.matrixOf(a, false), c.opt)
	if errors.Is(err, linalg.ErrNotTallSkinny) {
		return nil, fmt.Errorf("SVD of shape %s with chunks %s: the array is chunked along both axes; use gpuarray.SVDCompressed(a, k, powerIters, oversamples, seed) for an approximate rank-k SVD, or %s",
			expr.ShapeString(a.n.Shape), chunksString(a.n.Chunks), rechunkHint(a))
	}
	if err != nil {
		return nil, fmt.Errorf("SVD: %w", err)
	}
	return svdArrays(r, a, c)
}

// SVDCompressed returns an approximate rank-k SVD of a 2-d array with any chunking, by the
// randomized algorithm (Halko, Martinsson, Tropp): a standard normal test matrix of
// k+oversamples columns drawn from seed by the counter-based generator (so the factors are the
// same for any chunking and backend, up to rounding), powerIters rounds of power iteration,
// an orthonormal basis by TSQR, and the SVD of the small projected matrix.
func SVDCompressed(a *Array, k, powerIters, oversamples int, seed int64, opts ...ComputeOption) (*SVDResult, error) {
	if err := check2D("SVDCompressed", a); err != nil {
		return nil, err
	}
	defer pinGraph(a.n)()
	c, err := newLinalgConfig(opts)
	if err != nil {
		return nil, fmt.Errorf("SVDCompressed: %w", err)
	}
	c.opt.LeafRows = 4 * (k + oversamples)
	r, err := linalg.SVDCompressed(c.ctx, c.matrixOf(a, false), k, powerIters, oversamples, uint64(seed), c.opt)
	if err != nil {
		return nil, fmt.Errorf("SVDCompressed of shape %s: %w", expr.ShapeString(a.n.Shape), err)
	}
	return svdArrays(r, a, c)
}

// path names the kernels that ran, and why not the GPU's where it was asked for.
func (c *linalgConfig) path(kernels string) string {
	if c.gpuFallback != "" {
		return kernels + " (GPU kernels unavailable: " + c.gpuFallback + ")"
	}
	if c.cublasMissing != "" {
		return kernels + " (cuBLAS/cuSOLVER unavailable: " + c.cublasMissing + ")"
	}
	if c.hostTSQR != "" {
		return kernels + " (" + c.hostTSQR + ")"
	}
	return kernels
}

// tsqrThroughHost notes for Path, and warns on stderr (a cell shows it), that the QR or SVD
// (what) asked for on a GPU runs its TSQR block by block with its blocks in host memory, and
// why the device TSQR (svdOnDevice, qrOnDevice) did not apply.
func (c *linalgConfig) tsqrThroughHost(what, why string) {
	c.hostTSQR = "TSQR block by block through host memory: " + why
	fmt.Fprintf(os.Stderr, "gpuarray warning: %s: %s\n", what, c.hostTSQR)
}

// svdArrays wraps a result's factors as arrays: U keeps a's row chunks, V its column chunks.
// A U held on the device may be passed in place of r.U.
func svdArrays(r *linalg.SVDResult, a *Array, c *linalgConfig, held ...*Array) (*SVDResult, error) {
	k := len(r.S)
	rows, cols := a.n.Chunks[0], a.n.Chunks[1]
	var u *Array
	var err error
	if len(held) > 0 {
		u = held[0]
	} else if u, err = dataArray(r.U.Data, []int{r.U.Rows, k}, [][]int{rows, {k}}); err != nil {
		return nil, fmt.Errorf("SVD: U: %w", err)
	}
	s, err := dataArray(r.S, []int{k}, [][]int{{k}})
	if err != nil {
		return nil, fmt.Errorf("SVD: S: %w", err)
	}
	v, err := dataArray(r.Vt.Data, []int{k, r.Vt.Cols}, [][]int{{k}, cols})
	if err != nil {
		return nil, fmt.Errorf("SVD: V: %w", err)
	}
	return &SVDResult{U: u, S: s, V: v, Path: c.path(r.Kernels)}, nil
}

func chunksString(cs [][]int) string {
	parts := make([]string, len(cs))
	for i, c := range cs {
		s := make([]string, len(c))
		for j, x := range c {
			s[j] = fmt.Sprint(x)
		}
		parts[i] = "(" + strings.Join(s, ", ")
		if len(c) == 1 {
			parts[i] += ","
		}
		parts[i] += ")"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

// tupleHTML renders named arrays side by side with their shapes and chunking.
func tupleHTML(title, path string, names []string, arrs []*Array) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<div><b>%s</b> <span style="color:#666">(%s)</span><table><tr>`, html.EscapeString(title), html.EscapeString(path))
	for i, a := range arrs {
		fmt.Fprintf(&b, `<td style="vertical-align:top"><b>%s</b> %s, chunks %s<br>%s</td>`,
			html.EscapeString(names[i]), expr.ShapeString(a.n.Shape), html.EscapeString(chunksString(a.n.Chunks)), a.HTML())
	}
	b.WriteString(`</tr></table></div>`)
	return b.String()
}

// HTML shows U, S and V with their shapes and chunking, and the kernels that ran.
func (r *SVDResult) HTML() string {
	return tupleHTML("SVD", r.Path, []string{"U", "S", "V"}, []*Array{r.U, r.S, r.V})
}

// String summarizes the result: shapes and chunking.
func (r *SVDResult) String() string {
	return fmt.Sprintf("SVD(U %s chunks %s, S %s, V %s chunks %s; %s)", expr.ShapeString(r.U.n.Shape), chunksString(r.U.n.Chunks),
		expr.ShapeString(r.S.n.Shape), expr.ShapeString(r.V.n.Shape), chunksString(r.V.n.Chunks), r.Path)
}

// HTML shows Q and R with their shapes and chunking, and the kernels that ran.
func (r *QRResult) HTML() string {
	return tupleHTML("QR", r.Path, []string{"Q", "R"}, []*Array{r.Q, r.R})
}

// String summarizes the result: shapes and chunking.
func (r *QRResult) String() string {
	return fmt.Sprintf("QR(Q %s chunks %s, R %s; %s)", expr.ShapeString(r.Q.n.Shape), chunksString(r.Q.n.Chunks), expr.ShapeString(r.R.n.Shape), r.Path)
}
