package gpuarray

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// The linear algebra of the Array API standard's linalg extension that is elementwise work,
// views and reductions: lazy, fused into one pass per chunk, and run wherever Compute runs it
// (the CPU, GPUs, cluster workers). The factorizations are in linalg.go.

// Diagonal returns the diagonal of the last two axes with offset k (above the main diagonal for
// k > 0), as the Array API's linalg.diagonal: a view, no copy.
func Diagonal(x *Array, k int) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	return wrap(expr.NewDiagonal(x.n, k))
}

// Diagonal returns the diagonal of a's last two axes with offset k (default 0; see the function).
func (a *Array) Diagonal(k ...int) *Array { return Diagonal(a, offset(k)) }

// Trace returns the sum of the diagonal of the last two axes with offset k (linalg.trace).
func Trace(x *Array, k int) *Array { return Diagonal(x, k).Sum(-1) }

// Trace returns the sum of a's diagonal with offset k (default 0; see the function).
func (a *Array) Trace(k ...int) *Array { return Trace(a, offset(k)) }

// Outer returns the outer product of two 1-d arrays (linalg.outer): out[i, j] = x1[i]*x2[j].
func Outer(x1, x2 *Array) *Array {
	for _, x := range []*Array{x1, x2} {
		if err := x.Err(); err != nil {
			return errArray(err)
		}
		if x.NDim() != 1 {
			return errArray(fmt.Errorf("Outer: arrays must be 1-d, got shapes %s and %s", expr.ShapeString(x1.Shape()), expr.ShapeString(x2.Shape())))
		}
	}
	return ExpandDims(x1, 1).Mul(ExpandDims(x2, 0))
}

// Vecdot returns the dot product of x1 and x2 along axis (negative: from the end), with
// broadcasting over the other axes (linalg.vecdot; real arrays).
func Vecdot(x1, x2 *Array, axis int) *Array {
	for _, x := range []*Array{x1, x2} {
		if err := x.Err(); err != nil {
			return errArray(err)
		}
	}
	if axis >= 0 {
		return errArray(fmt.Errorf("Vecdot: axis %d must be negative (counted from the end), as the Array API requires", axis))
	}
	return x1.Mul(x2).Sum(axis)
}

// Cross returns the cross product of 3-element vectors along axis (linalg.cross), with
// broadcasting over the other axes.
func Cross(x1, x2 *Array, axis int) *Array {
	for _, x := range []*Array{x1, x2} {
		if err := x.Err(); err != nil {
			return errArray(err)
		}
	}
	prod := x1.Mul(x2) // broadcasts the operands and checks their shapes
	if err := prod.Err(); err != nil {
		return errArray(fmt.Errorf("Cross: %w", err))
	}
	r := prod.NDim()
	ax := axis
	if ax < 0 {
		ax += r
	}
	if ax < 0 || ax >= r {
		return errArray(fmt.Errorf("Cross: axis %d out of range for shape %s", axis, expr.ShapeString(prod.Shape())))
	}
	for _, x := range []*Array{x1, x2} {
		k := ax - (r - x.NDim())
		if k < 0 || x.Shape()[k] != 3 {
			return errArray(fmt.Errorf("Cross: axis %d of shapes %s and %s must have length 3", axis, expr.ShapeString(x1.Shape()), expr.ShapeString(x2.Shape())))
		}
	}
	comp := func(x *Array, i int) *Array {
		idx := make([]Index, x.NDim())
		for d := range idx {
			idx[d] = All()
		}
		idx[ax-(r-x.NDim())] = At(i)
		return x.Slice(idx...)
	}
	c := func(i, j int) *Array { return comp(x1, i).Mul(comp(x2, j)).Sub(comp(x1, j).Mul(comp(x2, i))) }
	return StackAxis(ax, c(1, 2), c(2, 0), c(0, 1))
}

// VectorNorm returns the p-norm of x over axes (all of them when none are given), as
// linalg.vector_norm: ord 2 (Euclidean), 1, math.Inf(1) (largest magnitude), math.Inf(-1),
// 0 (the count of nonzeros), or any other p (sum |x|^p)^(1/p).
func VectorNorm(x *Array, ord float64, axes ...int) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	if x.marked() { // KeepDims
		return keepAxes(VectorNorm(&Array{n: x.n}, ord, axes...), axes, len(x.n.Shape))
	}
	a := x.Abs()
	switch {
	case ord == 2:
		return a.Mul(a).Sum(axes...).Sqrt()
	case ord == 1:
		return a.Sum(axes...)
	case math.IsInf(ord, 1):
		return a.Max(axes...)
	case math.IsInf(ord, -1):
		return a.Min(axes...)
	case ord == 0:
		return x.Ne(0).AsType(x.realDType()).Sum(axes...)
	case math.IsNaN(ord):
		return errArray(fmt.Errorf("VectorNorm: ord NaN"))
	}
	return a.Pow(ord).Sum(axes...).Pow(1 / ord)
}

// realDType is the floating dtype of a's magnitudes.
func (a *Array) realDType() DType {
	switch a.DType() {
	case Float32, Complex64:
		return Float32
	}
	return Float64
}

// MatrixNorm returns a norm of the matrices in the last two axes (linalg.matrix_norm): "fro"
// (Frobenius), "1" / "-1" (largest / smallest column sum of magnitudes), "inf" / "-inf"
// (largest / smallest row sum). The norms that need singular values ("2", "-2", "nuc") are
// errors naming SVD.
func MatrixNorm(x *Array, ord string) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	if x.NDim() < 2 {
		return errArray(fmt.Errorf("MatrixNorm: an array of shape %s has fewer than two axes", expr.ShapeString(x.Shape())))
	}
	if x.marked() { // KeepDims
		return keepAxes(MatrixNorm(&Array{n: x.n}, ord), []int{-2, -1}, len(x.n.Shape))
	}
	a := x.Abs()
	switch strings.ToLower(ord) {
	case "fro", "":
		return a.Mul(a).Sum(-2, -1).Sqrt()
	case "1":
		return a.Sum(-2).Max(-1)
	case "-1":
		return a.Sum(-2).Min(-1)
	case "inf":
		return a.Sum(-1).Max(-1)
	case "-inf":
		return a.Sum(-1).Min(-1)
	case "2", "-2", "nuc":
		return errArray(fmt.Errorf("MatrixNorm: ord %q needs the singular values: compute them with SVD", ord))
	}
	return errArray(fmt.Errorf("MatrixNorm: unknown ord %q (fro, 1, -1, inf, -inf)", ord))
}

// Tensordot contracts the last n axes of a with the first n axes of b (linalg.tensordot with
// an integer axes): the result has a's other axes, then b's. It is lazy: one fused pass of
// products summed over the contracted axes (no BLAS; for large 2-d products MatMul is faster).
func Tensordot(a, b *Array, n int) *Array {
	for _, x := range []*Array{a, b} {
		if err := x.Err(); err != nil {
			return errArray(err)
		}
	}
	if n < 0 || n > a.NDim() || n > b.NDim() {
		return errArray(fmt.Errorf("Tensordot: %d axes to contract for shapes %s and %s", n, expr.ShapeString(a.Shape()), expr.ShapeString(b.Shape())))
	}
	aAxes, bAxes := make([]int, n), make([]int, n)
	for i := 0; i < n; i++ {
		aAxes[i], bAxes[i] = a.NDim()-n+i, i
	}
	return TensordotAxes(a, b, aAxes, bAxes)
}

// TensordotAxes contracts axes aAxes[i] of a with bAxes[i] of b (linalg.tensordot with a pair
// of axis lists); the result has a's remaining axes, then b's.
func TensordotAxes(a, b *Array, aAxes, bAxes []int) *Array {
	for _, x := range []*Array{a, b} {
		if err := x.Err(); err != nil {
			return errArray(err)
		}
	}
	if len(aAxes) != len(bAxes) {
		return errArray(fmt.Errorf("Tensordot: %d axes of a, %d of b", len(aAxes), len(bAxes)))
	}
	letters := []rune("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
	if a.NDim()+b.NDim() > len(letters) {
		return errArray(fmt.Errorf("Tensordot: too many axes (%d)", a.NDim()+b.NDim()))
	}
	la, lb := make([]rune, a.NDim()), make([]rune, b.NDim())
	next := 0
	for i := range la {
		la[i] = letters[next]
		next++
	}
	for i := range lb {
		lb[i] = letters[next]
		next++
	}
	for i := range aAxes {
		x, y := aAxes[i], bAxes[i]
		if x < 0 {
			x += a.NDim()
		}
		if y < 0 {
			y += b.NDim()
		}
		if x < 0 || x >= a.NDim() || y < 0 || y >= b.NDim() {
			return errArray(fmt.Errorf("Tensordot: axes %v and %v out of range for shapes %s and %s", aAxes, bAxes, expr.ShapeString(a.Shape()), expr.ShapeString(b.Shape())))
		}
		lb[y] = la[x]
	}
	var out []rune
	for _, l := range la {
		if !strings.ContainsRune(string(lb), l) {
			out = append(out, l)
		}
	}
	for _, l := range lb {
		if !strings.ContainsRune(string(la), l) {
			out = append(out, l)
		}
	}
	return Einsum(string(la)+","+string(lb)+"->"+string(out), a, b)
}

// Einsum evaluates Einstein summation over operands (numpy.einsum without ellipses or
// repeated indices within one operand): "ij,jk->ik" is a matrix product, "i,i->" a dot
// product, "ij->ji" a transpose; without "->" the output has the indices that appear once,
// in alphabetical order. It is lazy: the operands are permuted and broadcast to the full index
// space, multiplied and summed over the indices not in the output, in one fused pass.
func Einsum(subscripts string, operands ...*Array) *Array {
	for _, x := range operands {
		if err := x.Err(); err != nil {
			return errArray(err)
		}
	}
	spec := strings.ReplaceAll(subscripts, " ", "")
	lhs, rhs, explicit := strings.Cut(spec, "->")
	terms := strings.Split(lhs, ",")
	if len(terms) != len(operands) {
		return errArray(fmt.Errorf("Einsum %q: %d terms for %d operands", subscripts, len(terms), len(operands)))
	}
	if strings.Contains(spec, ".") {
		return errArray(fmt.Errorf("Einsum %q: ellipses (...) are not supported; name every axis", subscripts))
	}
	size := map[rune]int{}
	count := map[rune]int{}
	for i, t := range terms {
		shape := operands[i].Shape()
		if len([]rune(t)) != len(shape) {
			return errArray(fmt.Errorf("Einsum %q: term %q has %d indices, operand %d has shape %s", subscripts, t, len([]rune(t)), i, expr.ShapeString(shape)))
		}
		seen := map[rune]bool{}
		for k, l := range []rune(t) {
			if !('a' <= l && l <= 'z' || 'A' <= l && l <= 'Z') {
				return errArray(fmt.Errorf("Einsum %q: %q is not an index letter", subscripts, l))
			}
			if seen[l] {
				return errArray(fmt.Errorf("Einsum %q: index %q repeats within term %q (a diagonal): use Diagonal first", subscripts, l, t))
			}
			seen[l] = true
			if n, ok := size[l]; ok && n != shape[k] {
				return errArray(fmt.Errorf("Einsum %q: index %q has lengths %d and %d", subscripts, l, n, shape[k]))
			}
			size[l] = shape[k]
			count[l]++
		}
	}
	var out []rune
	if explicit {
		for _, l := range rhs {
			if _, ok := size[l]; !ok {
				return errArray(fmt.Errorf("Einsum %q: output index %q is in no operand", subscripts, l))
			}
			if strings.Count(rhs, string(l)) > 1 {
				return errArray(fmt.Errorf("Einsum %q: output index %q repeats", subscripts, l))
			}
			out = append(out, l)
		}
	} else {
		for l, c := range count {
			if c == 1 {
				out = append(out, l)
			}
		}
		slices.Sort(out)
	}
	full := append([]rune(nil), out...)
	var contracted []rune
	for l := range size {
		if !strings.ContainsRune(string(out), l) {
			contracted = append(contracted, l)
		}
	}
	slices.Sort(contracted)
	full = append(full, contracted...)
	var prod *Array
	for i, t := range terms {
		x := operands[i]
		tr := []rune(t)
		// Permute the operand's axes into full order, then add the axes it lacks.
		var perm, missing []int
		for p, l := range full {
			if k := slices.Index(tr, l); k >= 0 {
				perm = append(perm, k)
			} else {
				missing = append(missing, p)
			}
		}
		if len(perm) > 1 {
			x = PermuteDims(x, perm...)
		}
		if len(missing) > 0 {
			x = ExpandDims(x, missing...)
		}
		if prod == nil {
			prod = x
		} else {
			prod = prod.Mul(x)
		}
	}
	if prod == nil {
		return errArray(fmt.Errorf("Einsum %q: no operands", subscripts))
	}
	if len(contracted) == 0 {
		return prod
	}
	axes := make([]int, len(contracted))
	for i := range axes {
		axes[i] = len(out) + i
	}
	return prod.Sum(axes...)
}

// The factorizations of the linalg extension that work on whole matrices: the last two axes
// are brought into one chunk each (matrices are batched over the other axes, which keep their
// chunks), and every task factors its matrices on the CPU with OpenBLAS's LAPACK where it loads
// (package linalg/openblas), else gonum's, or with cuSOLVER (getrf/getrs, potrf, syevd, gesvd;
// package cuda/blas) on a GPU. They are lazy stages like the transforms: they run where Compute
// runs them, on cluster workers too; with OnGPU and no cuSOLVER they run on the host and say so
// (Path, a warning).

// matrixCall applies a matrix function to x's matrices.
func matrixCall(x *Array, fn expr.CallFn, name string, n int, dt DType) *Array {
	if err := x.Err(); err != nil {
		return errArray(err)
	}
	a := x.n
	r := len(a.Shape)
	if r < 2 {
		return errArray(fmt.Errorf("%s: an array of shape %s is not a matrix", name, expr.ShapeString(a.Shape)))
	}
	if a.DType.Kind() == dtype.KindComplex {
		return errArray(fmt.Errorf("%s: complex matrices are not supported yet", name))
	}
	if len(a.Chunks[r-2]) != 1 || len(a.Chunks[r-1]) != 1 {
		chunks := make([][]int, r)
		copy(chunks, a.Chunks)
		chunks[r-2], chunks[r-1] = []int{a.Shape[r-2]}, []int{a.Shape[r-1]}
		var err error
		if a, err = expr.NewRechunk(a, chunks); err != nil {
			return errArray(fmt.Errorf("%s: %w", name, err))
		}
	}
	if dt == 0 {
		dt = Float64
		if a.DType == Float32 {
			dt = Float32
		}
	}
	out, err := expr.NewCall(a, expr.Call{Fn: fn, N: n}, dt)
	if err != nil {
		return errArray(fmt.Errorf("%s: %w", name, err))
	}
	return &Array{n: out}
}

// Inv returns the inverse of each square matrix in the last two axes (linalg.inv); an exactly
// singular matrix is an error when computed, as NumPy's LinAlgError.
func Inv(x *Array) *Array { return matrixCall(x, expr.FnInv, "Inv", 0, 0) }

// Det returns the determinant of each square matrix in the last two axes (linalg.det).
func Det(x *Array) *Array { return matrixCall(x, expr.FnDet, "Det", 0, 0) }

// Slogdet returns the sign and the natural log of the magnitude of each determinant
// (linalg.slogdet): det = sign * exp(logabsdet), without overflow.
func Slogdet(x *Array) (sign, logabsdet *Array) {
	return matrixCall(x, expr.FnSlogdetSign, "Slogdet", 0, 0), matrixCall(x, expr.FnSlogdetLog, "Slogdet", 0, 0)
}

// Cholesky returns the lower Cholesky factor of each symmetric positive-definite matrix
// (linalg.cholesky; the lower triangle is read); a matrix that is not positive definite is an
// error when computed.
func Cholesky(x *Array) *Array { return matrixCall(x, expr.FnCholesky, "Cholesky", 0, 0) }

// Eigh returns the eigenvalues (ascending) and eigenvectors (as columns) of each symmetric
// matrix (linalg.eigh; the lower triangle is read). Each eigenvector's sign is LAPACK's choice,
// as in NumPy.
func Eigh(x *Array) (eigenvalues, eigenvectors *Array) {
	return Eigvalsh(x), matrixCall(x, expr.FnEighVectors, "Eigh", 0, 0)
}

// Eigvalsh returns the eigenvalues of each symmetric matrix, ascending (linalg.eigvalsh).
func Eigvalsh(x *Array) *Array { return matrixCall(x, expr.FnEigvalsh, "Eigvalsh", 0, 0) }

// Pinv returns the Moore-Penrose pseudo-inverse of each matrix (linalg.pinv), dropping
// singular values below max(M, N) * eps times the largest (the Array API's default rtol).
func Pinv(x *Array) *Array { return matrixCall(x, expr.FnPinv, "Pinv", 0, 0) }

// MatrixRank returns the rank of each matrix (linalg.matrix_rank): the singular values above
// max(M, N) * eps times the largest, as int64.
func MatrixRank(x *Array) *Array { return matrixCall(x, expr.FnMatrixRank, "MatrixRank", 0, Int64) }

// rhsJoin joins a's matrices and the right-hand sides b (a vector when b has one axis) along
// the last axis, broadcasting b over a's batch axes; vector says to drop the result's last axis.
func rhsJoin(name string, a, b *Array) (cat *Array, vector bool, err error) {
	for _, x := range []*Array{a, b} {
		if err := x.Err(); err != nil {
			return nil, false, err
		}
	}
	if a.NDim() < 2 {
		return nil, false, fmt.Errorf("%s: a of shape %s is not a matrix", name, expr.ShapeString(a.Shape()))
	}
	if b.NDim() == 1 {
		b, vector = ExpandDims(b, 1), true
	}
	sa, sb := a.Shape(), b.Shape()
	if b.NDim() < 2 || sb[len(sb)-2] != sa[len(sa)-2] {
		return nil, false, fmt.Errorf("%s: b of shape %s does not match a of shape %s (b needs %d rows)", name, expr.ShapeString(b.Shape()), expr.ShapeString(sa), sa[len(sa)-2])
	}
	if a.NDim() > b.NDim() {
		shape := append(append([]int(nil), sa[:len(sa)-2]...), sb[len(sb)-2:]...)
		b = BroadcastTo(b, shape...)
	}
	cat = ConcatAxis(-1, a, b)
	if err := cat.Err(); err != nil {
		return nil, false, fmt.Errorf("%s: %w", name, err)
	}
	return cat, vector, nil
}

// rhsCall applies FnSolve or FnLstsq (a's columns n) to the matrix a and the right-hand sides
// b given apart (expr.NewCallRHS): a is computed by the call's own fused pass (on a GPU, where
// the solver reads it), b before it. ok is false where a has more than two axes (then a and b
// are joined).
func rhsCall(name string, fn expr.CallFn, a, b *Array, n int) (x *Array, ok bool) {
	for _, v := range []*Array{a, b} {
		if err := v.Err(); err != nil {
			return errArray(err), true
		}
	}
	if a.NDim() != 2 || b.NDim() > 2 || b.NDim() < 1 {
		return nil, false
	}
	for _, v := range []*Array{a, b} {
		if v.DType().Kind() == dtype.KindComplex {
			return errArray(fmt.Errorf("%s: complex matrices are not supported yet", name)), true
		}
	}
	vector := b.NDim() == 1
	if vector {
		b = ExpandDims(b, 1)
	}
	sa, sb := a.Shape(), b.Shape()
	if sb[0] != sa[0] {
		return errArray(fmt.Errorf("%s: b of shape %s does not match a of shape %s (b needs %d rows)", name, expr.ShapeString(b.Shape()), expr.ShapeString(sa), sa[0])), true
	}
	an := a.n
	if len(an.Chunks[0]) != 1 || len(an.Chunks[1]) != 1 {
		var err error
		if an, err = expr.NewRechunk(an, [][]int{{sa[0]}, {sa[1]}}); err != nil {
			return errArray(fmt.Errorf("%s: %w", name, err)), true
		}
	}
	dt := Float64
	if a.DType() == Float32 && b.DType() == Float32 {
		dt = Float32
	}
	out, err := expr.NewCallRHS(an, b.n, expr.Call{Fn: fn, N: n, RHS: sb[1]}, dt)
	if err != nil {
		return errArray(fmt.Errorf("%s: %w", name, err)), true
	}
	x = &Array{n: out}
	if vector {
		x = x.Squeeze(-1)
	}
	return x, true
}

// Solve returns x with a x = b for each square matrix a in the last two axes (linalg.solve); b
// is a vector (one axis) or matrices of right-hand sides, broadcast over a's other axes. An
// exactly singular a is an error when computed.
func Solve(a, b *Array) *Array {
	if err := a.Err(); err == nil && a.NDim() == 2 && a.Shape()[0] != a.Shape()[1] {
		return errArray(fmt.Errorf("Solve: a of shape %s is not square", expr.ShapeString(a.Shape())))
	}
	if err := a.Err(); err == nil && a.NDim() == 2 {
		if x, ok := rhsCall("Solve", expr.FnSolve, a, b, a.Shape()[1]); ok {
			return x
		}
	}
	cat, vector, err := rhsJoin("Solve", a, b)
	if err != nil {
		return errArray(err)
	}
	n := a.Shape()[a.NDim()-1]
	if n != a.Shape()[a.NDim()-2] {
		return errArray(fmt.Errorf("Solve: a of shape %s is not square", expr.ShapeString(a.Shape())))
	}
	x := matrixCall(cat, expr.FnSolve, "Solve", n, 0)
	if vector {
		x = x.Squeeze(-1)
	}
	return x
}

// Lstsq returns the least-squares solution x of a x = b (the one of least norm when a is rank
// deficient), as numpy.linalg.lstsq's first result with its default rcond (singular values
// below max(M, N) * eps times the largest are dropped). a has two axes; b one or two.
func Lstsq(a, b *Array) *Array {
	if err := a.Err(); err == nil && a.NDim() != 2 {
		return errArray(fmt.Errorf("Lstsq: a of shape %s must have two axes", expr.ShapeString(a.Shape())))
	}
	if err := a.Err(); err != nil {
		return errArray(err)
	}
	if x, ok := rhsCall("Lstsq", expr.FnLstsq, a, b, a.Shape()[1]); ok {
		return x
	}
	return errArray(fmt.Errorf("Lstsq: b of shape %s must have one or two axes", expr.ShapeString(b.Shape())))
}
