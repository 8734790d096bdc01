package gpuarray

import "github.com/gpunotes/gpunotes/gpuarray/expr"

// NumPy's package functions for what gpuarray has as methods, so that np.sqrt(x) and
// np.sum(x, axis=1) read gpuarray.Sqrt(x) and gpuarray.Sum(x, 1). (np.all has no function
// here: All is the index of a whole axis; x.All() is the reduction.)

// Abs returns |x| element by element (numpy.abs).
func Abs(x any) *Array { return unaryOf(expr.OpAbs, x) }

// Exp returns e**x element by element (numpy.exp).
func Exp(x any) *Array { return unaryOf(expr.OpExp, x) }

// Log returns the natural logarithm of x element by element (numpy.log).
func Log(x any) *Array { return unaryOf(expr.OpLog, x) }

// Sqrt returns the square root of x element by element (numpy.sqrt).
func Sqrt(x any) *Array { return unaryOf(expr.OpSqrt, x) }

// Sin returns the sine of x element by element (numpy.sin).
func Sin(x any) *Array { return unaryOf(expr.OpSin, x) }

// Cos returns the cosine of x element by element (numpy.cos).
func Cos(x any) *Array { return unaryOf(expr.OpCos, x) }

// Tanh returns the hyperbolic tangent of x element by element (numpy.tanh).
func Tanh(x any) *Array { return unaryOf(expr.OpTanh, x) }

// Sum returns x.Sum(axes...) (numpy.sum: all axes when none are given).
func Sum(x *Array, axes ...int) *Array { return x.Sum(axes...) }

// Mean returns x.Mean(axes...) (numpy.mean).
func Mean(x *Array, axes ...int) *Array { return x.Mean(axes...) }

// Max returns x.Max(axes...) (numpy.max).
func Max(x *Array, axes ...int) *Array { return x.Max(axes...) }

// Min returns x.Min(axes...) (numpy.min).
func Min(x *Array, axes ...int) *Array { return x.Min(axes...) }

// Prod returns x.Prod(axes...) (numpy.prod).
func Prod(x *Array, axes ...int) *Array { return x.Prod(axes...) }

// Std returns x.Std(axes...) (numpy.std).
func Std(x *Array, axes ...int) *Array { return x.Std(axes...) }

// Var returns x.Var(axes...) (numpy.var).
func Var(x *Array, axes ...int) *Array { return x.Var(axes...) }

// ArgMax returns x.ArgMax(axis...) (numpy.argmax: the flat index when no axis is given).
func ArgMax(x *Array, axis ...int) *Array { return x.ArgMax(axis...) }

// ArgMin returns x.ArgMin(axis...) (numpy.argmin).
func ArgMin(x *Array, axis ...int) *Array { return x.ArgMin(axis...) }

// Cumsum returns x.Cumsum(axis...) (numpy.cumsum: over the flattened x when no axis is
// given).
func Cumsum(x *Array, axis ...int) *Array { return x.Cumsum(axis...) }

// Cumprod returns x.Cumprod(axis...) (numpy.cumprod).
func Cumprod(x *Array, axis ...int) *Array { return x.Cumprod(axis...) }

// Unique returns the sorted distinct values of x (numpy.unique without its return_ flags;
// UniqueValues; UniqueCounts, UniqueInverse and UniqueAll give the rest).
func Unique(x *Array) *Array { return UniqueValues(x) }

// Norm returns the 2-norm of all of x's elements (numpy.linalg.norm(x) with ord and axis
// left out: the Frobenius norm of a matrix); VectorNorm and MatrixNorm take ord and axes.
func Norm(x *Array) *Array { return VectorNorm(x, 2) }

// Transpose returns x.Transpose(axes...) (numpy.transpose).
func Transpose(x *Array, axes ...int) *Array { return x.Transpose(axes...) }

// Swapaxes returns x.Swapaxes(axis1, axis2) (numpy.swapaxes).
func Swapaxes(x *Array, axis1, axis2 int) *Array { return x.Swapaxes(axis1, axis2) }

// Dot returns MatMul(a, b) (numpy.dot for 1-d and 2-d operands).
func Dot(a, b *Array) *Array { return MatMul(a, b) }
