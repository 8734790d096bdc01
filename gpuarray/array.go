package gpuarray

import (
	"fmt"
	"math"
	"slices"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/rng"
)

// DType is an element type: NumPy's names, sizes and promotion rules (package gpuarray/dtype).
type DType = dtype.DType

// Element types.
const (
	Float64    = dtype.Float64
	Float32    = dtype.Float32
	Bool       = dtype.Bool
	Int8       = dtype.Int8
	Int16      = dtype.Int16
	Int32      = dtype.Int32
	Int64      = dtype.Int64
	Uint8      = dtype.Uint8
	Uint16     = dtype.Uint16
	Uint32     = dtype.Uint32
	Uint64     = dtype.Uint64
	Complex64  = dtype.Complex64
	Complex128 = dtype.Complex128
)

// autoChunkElems bounds the elements of a chunk when no chunks are given (128 MiB of float64).
const autoChunkElems = 1 << 24

// Array is a lazy chunked N-d array. The zero value is not usable; arrays come from the creation
// functions and from operations on arrays.
type Array struct {
	n    *expr.Node
	err  error
	path string // which kernels computed a result (Compute), for Path
	keep bool   // KeepDims: the next reduction keeps its axes
}

// Path says which kernels computed an array that Compute returned on the GPU backend, like
// "gpu 0 NVIDIA H100 80GB HBM3 (fused kernels); matmul on cuBLAS (operands generated on the
// device)", followed by "; host fallback: …" for each part that ran on the CPU instead, with
// its time and the reason, and "; result kept on gpu 0" for an array result left in device
// memory; on the CPU, the library calls that ran ("solve on the CPU with OpenBLAS 0.3.21
// (LAPACK)"); on a cluster it is "host fallback: …" when GPU workers ran parts on their CPUs.
// It is "" for every other array.
func (a *Array) Path() string { return a.path }

func errArray(err error) *Array { return &Array{err: err} }

func wrap(n *expr.Node, err error) *Array {
	if err != nil {
		return errArray(err)
	}
	return &Array{n: n}
}

// Err returns the error made while building the array, if any.
func (a *Array) Err() error {
	if a == nil {
		return fmt.Errorf("gpuarray: nil array")
	}
	return a.err
}

// Shape returns the length of each axis (nil for an array with an error).
func (a *Array) Shape() []int {
	if a.Err() != nil {
		return nil
	}
	return slices.Clone(a.n.Shape)
}

// Chunks returns the chunk sizes along each axis.
func (a *Array) Chunks() [][]int {
	if a.Err() != nil {
		return nil
	}
	out := make([][]int, len(a.n.Chunks))
	for i, c := range a.n.Chunks {
		out[i] = slices.Clone(c)
	}
	return out
}

// NDim returns the number of axes.
func (a *Array) NDim() int { return len(a.Shape()) }

// Size returns the number of elements.
func (a *Array) Size() int64 {
	if a.Err() != nil {
		return 0
	}
	return expr.Size(a.n.Shape)
}

// DType returns the element type.
func (a *Array) DType() DType {
	if a.Err() != nil {
		return Float64
	}
	return a.n.DType
}

// NBytes returns the size of the array's data in bytes.
func (a *Array) NBytes() int64 { return a.Size() * int64(a.DType().Size()) }

// ArrayOption configures a created array: Shape, Chunks, ChunkSizes, WithDType.
type ArrayOption func(*spec)

type spec struct {
	shape      []int
	hasShape   bool
	size       []int
	perAxis    [][]int
	dtype      DType
	hasDType   bool
	hasChunks  bool
	hasPerAxis bool
}

// Shape sets the length of each axis.
func Shape(dims ...int) ArrayOption {
	return func(s *spec) { s.shape, s.hasShape = slices.Clone(dims), true }
}

// Chunks sets the chunk size of each axis (one size: the same on every axis, as dask's
// chunks=n); the last chunk of an axis may be smaller.
func Chunks(sizes ...int) ArrayOption {
	return func(s *spec) { s.size, s.hasChunks = slices.Clone(sizes), true }
}

// ChunkSizes sets every chunk's size explicitly, one list per axis; each list must add up to
// the axis length.
func ChunkSizes(perAxis ...[]int) ArrayOption {
	return func(s *spec) {
		s.perAxis = make([][]int, len(perAxis))
		for i, c := range perAxis {
			s.perAxis[i] = slices.Clone(c)
		}
		s.hasPerAxis = true
	}
}

// WithDType sets the element type (default Float64).
func WithDType(dt DType) ArrayOption {
	return func(s *spec) { s.dtype, s.hasDType = dt, true }
}

func resolve(what string, defShape []int, opts []ArrayOption) (shape []int, chunks [][]int, dt expr.DType, err error) {
	return resolveDT(what, defShape, Float64, opts)
}

// resolveDT is resolve with def as the dtype when no WithDType is given.
func resolveDT(what string, defShape []int, def DType, opts []ArrayOption) (shape []int, chunks [][]int, dt expr.DType, err error) {
	s := spec{dtype: def}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	if !s.dtype.Valid() {
		return nil, nil, 0, fmt.Errorf("%s: unknown dtype %d", what, s.dtype)
	}
	dt = s.dtype
	switch {
	case s.hasShape:
		shape = s.shape
	case defShape != nil:
		shape = defShape
	default:
		return nil, nil, 0, fmt.Errorf("%s: no Shape given", what)
	}
	for ax, d := range shape {
		if d < 0 {
			return nil, nil, 0, fmt.Errorf("%s: negative length %d on axis %d of shape %s", what, d, ax, expr.ShapeString(shape))
		}
	}
	switch {
	case s.hasPerAxis:
		chunks = s.perAxis
		if err := expr.CheckChunks(shape, chunks); err != nil {
			return nil, nil, 0, fmt.Errorf("%s: %w", what, err)
		}
	case s.hasChunks:
		if len(s.size) == 1 && len(shape) > 1 { // one size for every axis, as dask's chunks=n
			s.size = slices.Repeat(s.size, len(shape))
		}
		if chunks, err = expr.RegularChunks(shape, s.size); err != nil {
			return nil, nil, 0, fmt.Errorf("%s: %w", what, err)
		}
	default:
		chunks = expr.AutoChunks(shape, autoChunkElems)
	}
	return shape, chunks, dt, nil
}

// Full returns an array whose elements are all v.
func Full(v float64, opts ...ArrayOption) *Array {
	shape, chunks, dt, err := resolve("Full", nil, opts)
	if err != nil {
		return errArray(err)
	}
	return wrap(expr.NewConst(v, dt, shape, chunks))
}

// Zeros returns an array of zeros.
func Zeros(opts ...ArrayOption) *Array { return Full(0, opts...) }

// Ones returns an array of ones.
func Ones(opts ...ArrayOption) *Array { return Full(1, opts...) }

// arange returns the 1-d array start, start+step, … below stop (above it for a negative step),
// ceil((stop-start)/step) elements as NumPy counts them (none for an empty range).
func arange(start, stop, step float64, opts ...ArrayOption) *Array {
	if step == 0 || math.IsNaN(step) || math.IsInf(step, 0) {
		return errArray(fmt.Errorf("Arange: step %v must be finite and nonzero", step))
	}
	num := int(math.Max(0, math.Ceil((stop-start)/step)))
	shape, chunks, dt, err := resolve("Arange", []int{num}, opts)
	if err != nil {
		return errArray(err)
	}
	if len(shape) != 1 || shape[0] != num {
		return errArray(fmt.Errorf("Arange(%v, %v, %v) has shape (%d,), not %s", start, stop, step, num, expr.ShapeString(shape)))
	}
	// NumPy fills element i as start + i*delta with delta = (start+step) - start, the step as
	// the first two elements hold it.
	return wrap(expr.NewRange(start, (start+step)-start, stop, false, num, dt, chunks))
}

// Linspace returns num evenly spaced numbers from start to stop, both included (num 1 gives
// start alone, as NumPy).
func Linspace(start, stop float64, num int, opts ...ArrayOption) *Array {
	if num < 0 {
		return errArray(fmt.Errorf("Linspace: num %d must not be negative", num))
	}
	shape, chunks, dt, err := resolve("Linspace", []int{num}, opts)
	if err != nil {
		return errArray(err)
	}
	if len(shape) != 1 || shape[0] != num {
		return errArray(fmt.Errorf("Linspace of %d numbers has shape (%d,), not %s", num, num, expr.ShapeString(shape)))
	}
	step := 0.0
	if num > 1 {
		step = (stop - start) / float64(num-1)
	}
	// As NumPy: element i is i*step + start, and the last of several is stop exactly; one
	// number is start.
	return wrap(expr.NewRange(start, step, stop, num > 1, num, dt, chunks))
}

// FromSlice32 returns a float32 array over a copy of data (row-major).
func FromSlice32(data []float32, opts ...ArrayOption) *Array {
	shape, chunks, _, err := resolve("FromSlice32", []int{len(data)}, opts)
	if err != nil {
		return errArray(err)
	}
	return wrap(expr.NewData(dtype.OfFloat32(data).Clone(), shape, chunks))
}

// RandomState draws random arrays from a seed. Each array drawn gets its own Philox key
// (the seed and the number of arrays drawn before), so successive draws differ and a draw
// depends only on the seed and its position. Safe for concurrent use.
type RandomState struct {
	mu   sync.Mutex
	seed uint64
	draw uint32
}

// NewRandomState returns a RandomState for seed.
func NewRandomState(seed int64) *RandomState { return &RandomState{seed: uint64(seed)} }

func (r *RandomState) next() [2]uint32 {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := rng.KeyOf(r.seed, r.draw)
	r.draw++
	return [2]uint32{k.K0, k.K1}
}

func (r *RandomState) random(what string, d expr.Dist, p0, p1 float64, opts []ArrayOption) *Array {
	def := Float64
	if d.Integral() {
		def = Int64
	}
	shape, chunks, dt, err := resolveDT(what, nil, def, opts)
	if err != nil {
		return errArray(err)
	}
	if !d.Integral() && !dt.IsFloat() {
		return errArray(fmt.Errorf("%s: dtype %v; want float32 or float64", what, dt))
	}
	if r == nil {
		return errArray(fmt.Errorf("%s: nil RandomState", what))
	}
	return wrap(expr.NewRandom(expr.RandSpec{Dist: d, P0: p0, P1: p1, Key: r.next()}, dt, shape, chunks))
}

// Normal returns normal numbers with mean loc and standard deviation scale.
func (r *RandomState) Normal(loc, scale float64, opts ...ArrayOption) *Array {
	return r.random("Normal", expr.Normal, loc, scale, opts)
}

// StandardNormal returns normal numbers with mean 0 and standard deviation 1.
func (r *RandomState) StandardNormal(opts ...ArrayOption) *Array {
	return r.random("StandardNormal", expr.Normal, 0, 1, opts)
}

// Uniform returns uniform numbers in [low, high).
func (r *RandomState) Uniform(low, high float64, opts ...ArrayOption) *Array {
	return r.random("Uniform", expr.Uniform, low, high, opts)
}

// Integers returns uniform integers in [low, high), as floating point numbers.
func (r *RandomState) Integers(low, high int64, opts ...ArrayOption) *Array {
	if high <= low {
		return errArray(fmt.Errorf("Integers: high %d must be greater than low %d", high, low))
	}
	return r.random("Integers", expr.Integers, float64(low), float64(high), opts)
}
