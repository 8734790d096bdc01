package expr

import (
	"fmt"
	"slices"
)

// Call is a library function applied chunk by chunk to whole lines of an array along one
// axis (a Fourier transform) or to whole matrices in its last two axes (a factorization). It
// cannot be fused into an elementwise pass, so the planner gives it a stage of its own whose
// tasks compute the fused values of their chunk and then pass them through the function
// (package plan: Kernel.Call).
type Call struct {
	Fn    CallFn
	Axis  int     // transforms: the axis of Args[0] they work along (one chunk there)
	N     int     // transforms: the transform's length; FnSolve, FnLstsq: the columns of a
	Scale float64 // transforms: every result value is multiplied by it (the normalization)
	// RHS, for FnSolve and FnLstsq, is the number of right-hand sides when they are the call's
	// second operand (Args[1], NewCallRHS), read whole by every task; 0 when they are joined
	// to a's columns in Args[0].
	RHS int `json:",omitempty"`
	// Blocks, for FnMatMul, are the operands' chunks the product sums over: a's along the
	// inner axis, b's along it, and b's along its columns.
	Blocks [][]int `json:",omitempty"`
	// Off, for FnMatMul, is the first column of Args[1] the product reads: it reads the panel
	// of N columns from there (NewMatMul), and a task is given only that panel.
	Off int `json:",omitempty"`
	// Keep, for sorts, keeps only these positions of each sorted line, in this order
	// (quantiles read two or three, TopK the first k): the result's axis has len(Keep) values.
	Keep []int `json:",omitempty"`
}

// CallFn is a library function.
type CallFn uint8

// Library functions. Inputs are computed in float64 (or complex128) and results converted to
// the node's dtype.
const (
	FnFFT   CallFn = iota // complex transform, forward (exp(-2 pi i jk/n))
	FnIFFT                // complex transform, inverse (unnormalized; Scale normalizes)
	FnRFFT                // real input, N/2+1 complex coefficients out (N is the input length)
	FnIRFFT               // N/2+1 coefficients in (real parts of DC and Nyquist), N real values out
	FnHFFT                // IRFFT of the conjugate: a Hermitian signal's real spectrum
	FnIHFFT               // the conjugate of RFFT

	// Scans along the axis, in order, accumulated in the result's dtype (N is the length).
	FnCumSum  // running sums
	FnCumProd // running products
	FnProd    // the product of the line (the axis kept, of length 1)

	// Matrix functions of the last two axes (one chunk each), batched over the others.
	FnInv         // inverse of a square matrix
	FnDet         // determinant (the two axes dropped)
	FnSlogdetSign // sign of the determinant (the two axes dropped)
	FnSlogdetLog  // log of the determinant's magnitude (the two axes dropped)
	FnCholesky    // lower Cholesky factor (the lower triangle is read)
	FnEigvalsh    // eigenvalues of a symmetric matrix, ascending (the last axis dropped)
	FnEighVectors // eigenvectors of a symmetric matrix, as columns, in the eigenvalues' order
	FnPinv        // pseudo-inverse (the two axes swapped), cutoff max(M, N)*eps*largest
	FnMatrixRank  // count of singular values above max(M, N)*eps*largest (the two axes dropped)
	FnSolve       // [a | b] with a square of N columns: the solution of a x = b
	FnLstsq       // [a | b] with a of N columns: the least-squares (minimum-norm) solution

	// Sorts along Axis (N is its length): stable, NaN last ascending and first descending,
	// in the values' own dtype (no float64 conversion, so integers stay exact).
	FnSort        // the sorted values, ascending
	FnSortDesc    // the sorted values, descending (ties keep their order)
	FnArgsort     // the int64 indices that sort the line ascending
	FnArgsortDesc // the int64 indices that sort the line descending (ties in index order)

	// FnMatMul is the product of Args[0] (rows x K, one chunk along K) and the panel of N
	// columns from Off of the further operand Args[1] (K rows) along Axis 1: N columns out
	// (NewMatMul). Blocks holds the chunks the CPU sums over in a fixed order: a's along K,
	// b's along K and the panel's along N.
	FnMatMul

	// FnBincount counts the values 0..N-1 of each chunk of an array of any shape (int64
	// counts), or sums the weights of an (n, 2) array of [value, weight] rows (float64 sums):
	// each chunk gives N results, one after another in row-major chunk order (NewBincount),
	// which a sum over chunks combines.
	FnBincount
)

var callNames = [...]string{"fft", "ifft", "rfft", "irfft", "hfft", "ihfft", "cumulative_sum", "cumulative_prod", "prod",
	"inv", "det", "slogdet sign", "slogdet", "cholesky", "eigvalsh", "eigh", "pinv", "matrix_rank", "solve", "lstsq",
	"sort", "sort descending", "argsort", "argsort descending", "matmul", "bincount"}

// Matrix reports whether f works on the matrices of the last two axes.
func (f CallFn) Matrix() bool { return f >= FnInv && f <= FnLstsq }

// Transform reports whether f is a Fourier transform along an axis.
func (f CallFn) Transform() bool { return f <= FnIHFFT }

// Scans reports whether f is a cumulative sum or product, or a product, along an axis.
func (f CallFn) Scans() bool { return f >= FnCumSum && f <= FnProd }

// Sorts reports whether f sorts along an axis: it reads its values in their own dtype.
func (f CallFn) Sorts() bool { return f >= FnSort && f <= FnArgsortDesc }

func (f CallFn) String() string {
	if int(f) < len(callNames) {
		return callNames[f]
	}
	return fmt.Sprintf("call(%d)", uint8(f))
}

// OutLen returns the length of a transform's axis in its result.
func (c Call) OutLen() int {
	switch c.Fn {
	case FnBincount:
		return c.N
	case FnRFFT, FnIHFFT:
		return c.N/2 + 1
	case FnProd:
		return 1
	}
	if len(c.Keep) > 0 && c.Fn.Sorts() {
		return len(c.Keep)
	}
	return c.N
}

// OutShape returns the shape of the call's result for an input block (or array) of shape in.
func (c Call) OutShape(in []int) []int {
	if c.Fn == FnBincount {
		return []int{c.N}
	}
	out := slices.Clone(in)
	if !c.Fn.Matrix() {
		out[c.Axis] = c.OutLen()
		return out
	}
	r := len(in)
	m, n := in[r-2], in[r-1]
	switch c.Fn {
	case FnDet, FnSlogdetSign, FnSlogdetLog, FnMatrixRank:
		return out[:r-2]
	case FnEigvalsh:
		return out[:r-1]
	case FnPinv:
		out[r-2], out[r-1] = n, m
	case FnSolve:
		out[r-1] = n - c.N
		if c.RHS > 0 {
			out[r-1] = c.RHS
		}
	case FnLstsq:
		out[r-2], out[r-1] = c.N, n-c.N
		if c.RHS > 0 {
			out[r-1] = c.RHS
		}
	}
	return out
}

// OutOffset returns where the result of a block at offset off, chunk number chunk of its
// stage, goes: the same offset along the axes the result keeps (the axes the call reads whole
// start at 0); a bincount's N results go after those of the chunks before.
func (c Call) OutOffset(off []int, chunk int) []int {
	if c.Fn == FnBincount {
		return []int{chunk * c.N}
	}
	return slices.Clone(off)[:len(c.OutShape(off))]
}

// NewBincount counts the values 0..n-1 in each chunk of the array a of any rank (int64
// counts: a histogram's bins need no ravel, which would read across chunks), or with
// weighted, sums the weights of each chunk's rows of the (m, 2) array a of [value, weight]
// (float64 sums). The result has n values per chunk (row-major chunk order), chunk after
// chunk: its sum over chunks (reshaped to (chunks, n)) is the bincount.
func NewBincount(a *Node, n int, weighted bool) (*Node, error) {
	if HasUnknown(a.Shape) {
		return nil, ErrUnknown("bincount", a.Shape)
	}
	if weighted && (len(a.Shape) != 2 || a.Shape[1] != 2 || len(a.Chunks[1]) != 1) {
		return nil, fmt.Errorf("bincount: weighted rows of shape %s, want (m, 2) in one chunk along axis 1", ShapeString(a.Shape))
	}
	if !weighted && len(a.Shape) == 0 {
		return nil, fmt.Errorf("bincount: values of shape (), want at least 1-d")
	}
	if n < 1 {
		return nil, fmt.Errorf("bincount: %d bins, want at least 1", n)
	}
	k := 1
	for _, c := range a.Chunks {
		k *= len(c)
	}
	chunks := make([]int, k)
	for i := range chunks {
		chunks[i] = n
	}
	dt := Int64
	if weighted {
		dt = Float64
	}
	return &Node{Kind: KCall, DType: dt, Shape: []int{k * n}, Chunks: [][]int{chunks}, Args: []*Node{a}, Call: &Call{Fn: FnBincount, N: n}}, nil
}

// InLen returns how many values along its axis the call reads: N, or N/2+1 for the inverse
// real transforms. Shorter inputs are padded with zeros.
func (c Call) InLen() int {
	if c.Fn == FnIRFFT || c.Fn == FnHFFT {
		return c.N/2 + 1
	}
	return c.N
}

// NewCall applies c to a, giving an array of dtype dt. For a transform, a must have one chunk
// along c.Axis, at most as long as the function reads (c.InLen: callers crop and rechunk
// first; a shorter axis is padded with zeros); for a matrix function, one chunk along each of
// the last two axes.
func NewCall(a *Node, c Call, dt DType) (*Node, error) {
	if c.Fn.Matrix() {
		return newMatrixCall(a, c, dt)
	}
	r := len(a.Shape)
	if c.Axis < 0 || c.Axis >= r {
		return nil, fmt.Errorf("%v: axis %d out of range for shape %s", c.Fn, c.Axis, ShapeString(a.Shape))
	}
	if len(a.Chunks[c.Axis]) != 1 {
		return nil, fmt.Errorf("%v: axis %d has %d chunks; it must be one chunk (rechunk it with -1)", c.Fn, c.Axis, len(a.Chunks[c.Axis]))
	}
	if want := c.InLen(); c.N < 1 || a.Shape[c.Axis] > want || a.Shape[c.Axis] < 1 {
		return nil, fmt.Errorf("%v of length %d reads 1 to %d values along axis %d, the array has %d (shape %s)", c.Fn, c.N, want, c.Axis, a.Shape[c.Axis], ShapeString(a.Shape))
	}
	for _, k := range c.Keep {
		if !c.Fn.Sorts() || k < 0 || k >= c.N {
			return nil, fmt.Errorf("%v: position %d kept of an axis of length %d", c.Fn, k, c.N)
		}
	}
	shape := c.OutShape(a.Shape)
	chunks := cloneChunks(a.Chunks)
	chunks[c.Axis] = []int{shape[c.Axis]}
	cc := c
	cc.Keep = slices.Clone(c.Keep)
	return &Node{Kind: KCall, DType: dt, Shape: shape, Chunks: chunks, Args: []*Node{a}, Call: &cc}, nil
}

func newMatrixCall(a *Node, c Call, dt DType) (*Node, error) {
	r := len(a.Shape)
	if r < 2 {
		return nil, fmt.Errorf("%v: an array of shape %s is not a matrix or a stack of matrices", c.Fn, ShapeString(a.Shape))
	}
	if len(a.Chunks[r-2]) != 1 || len(a.Chunks[r-1]) != 1 {
		return nil, fmt.Errorf("%v: the last two axes must be one chunk each, not %v (rechunk them with -1)", c.Fn, a.Chunks[r-2:])
	}
	m, n := a.Shape[r-2], a.Shape[r-1]
	switch c.Fn {
	case FnInv, FnDet, FnSlogdetSign, FnSlogdetLog, FnCholesky, FnEigvalsh, FnEighVectors:
		if m != n {
			return nil, fmt.Errorf("%v: the matrices of shape %s are not square", c.Fn, ShapeString(a.Shape))
		}
	case FnSolve:
		if c.RHS > 0 && (c.N != m || n != c.N) {
			return nil, fmt.Errorf("%v: a square matrix of %d columns in a block of shape %s", c.Fn, c.N, ShapeString(a.Shape))
		}
		if c.N != m || n < c.N {
			return nil, fmt.Errorf("%v: %d columns of a square matrix in a block of shape %s", c.Fn, c.N, ShapeString(a.Shape))
		}
	case FnLstsq:
		if c.RHS > 0 && n != c.N {
			return nil, fmt.Errorf("%v: a matrix of %d columns in a block of shape %s", c.Fn, c.N, ShapeString(a.Shape))
		}
		if c.N < 1 || n < c.N {
			return nil, fmt.Errorf("%v: %d columns of a matrix in a block of shape %s", c.Fn, c.N, ShapeString(a.Shape))
		}
	}
	shape := c.OutShape(a.Shape)
	chunks := cloneChunks(a.Chunks)[:len(shape)]
	for d := r - 2; d < len(shape); d++ {
		chunks[d] = []int{shape[d]}
	}
	cc := c
	return &Node{Kind: KCall, DType: dt, Shape: shape, Chunks: chunks, Args: []*Node{a}, Call: &cc}, nil
}

// NewCallRHS applies FnSolve or FnLstsq (c.RHS set) to the matrix a (two axes, one chunk
// each) and the right-hand sides b (a.Shape[0] x c.RHS), giving an array of dtype dt. Unlike
// joining b to a's columns (NewCall), a stays one operand that a task computes in one fused
// pass (on a GPU, on the device), and b is computed before the call and read whole.
func NewCallRHS(a, b *Node, c Call, dt DType) (*Node, error) {
	if c.Fn != FnSolve && c.Fn != FnLstsq || c.RHS < 1 {
		return nil, fmt.Errorf("%v: a second operand needs solve or lstsq and its column count, not %d", c.Fn, c.RHS)
	}
	if len(a.Shape) != 2 || len(b.Shape) != 2 || b.Shape[0] != a.Shape[0] || b.Shape[1] != c.RHS {
		return nil, fmt.Errorf("%v: right-hand sides of shape %s for a matrix of shape %s", c.Fn, ShapeString(b.Shape), ShapeString(a.Shape))
	}
	n, err := newMatrixCall(a, c, dt)
	if err != nil {
		return nil, err
	}
	n.Args = append(n.Args, b)
	return n, nil
}

// NewMatMul returns the product of the 2-d a (one chunk along axis 1) and the panel of n
// columns of the 2-d b from column off, in dtype dt: a call along a's axis 1 giving n columns,
// chunked by a's rows and one chunk of n columns. b is computed before the product unless it
// is data, and each task is given only the panel. blocks are the chunks the CPU sums over
// (Call.Blocks).
func NewMatMul(a, b *Node, off, n int, blocks [][]int, dt DType) (*Node, error) {
	if len(a.Shape) != 2 || len(b.Shape) != 2 || a.Shape[1] != b.Shape[0] {
		return nil, fmt.Errorf("matmul: shapes %s and %s not aligned", ShapeString(a.Shape), ShapeString(b.Shape))
	}
	if off < 0 || n < 0 || off+n > b.Shape[1] {
		return nil, fmt.Errorf("matmul: columns %d to %d of b of shape %s", off, off+n, ShapeString(b.Shape))
	}
	if len(a.Chunks[1]) != 1 {
		return nil, fmt.Errorf("matmul: a's inner axis has %d chunks; it must be one chunk", len(a.Chunks[1]))
	}
	c := Call{Fn: FnMatMul, Axis: 1, N: n, Off: off, Blocks: blocks}
	shape := []int{a.Shape[0], n}
	chunks := [][]int{slices.Clone(a.Chunks[0]), {n}}
	return &Node{Kind: KCall, DType: dt, Shape: shape, Chunks: chunks, Args: []*Node{a, b}, Call: &c}, nil
}

// OwnStage reports whether n is computed in a stage of its own, before the nodes that read it
// (which then read its values as data): reductions and library calls, which cannot be fused
// into the elementwise pass of their readers.
func (n *Node) OwnStage() bool { return n.Kind == KReduce || n.Kind == KCall }
