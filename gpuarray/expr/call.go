package expr

import (
	"fmt"
	"slices"
)

// Call is a library function applied to whole lines of an array along one axis, chunk by
// chunk: a Fourier transform, say. It cannot be fused into an elementwise pass, so the planner
// gives it a stage of its own whose tasks compute the fused values of their chunk and then pass
// them through the function (package plan: Kernel.Call).
type Call struct {
	Fn    CallFn
	Axis  int     // the axis of Args[0] it works along; Args[0] has one chunk there
	N     int     // the length of that axis in the result (the transform's length)
	Scale float64 // every result value is multiplied by it (an FFT's normalization)
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
)

var callNames = [...]string{"fft", "ifft", "rfft", "irfft", "hfft", "ihfft"}

func (f CallFn) String() string {
	if int(f) < len(callNames) {
		return callNames[f]
	}
	return fmt.Sprintf("call(%d)", uint8(f))
}

// OutLen returns the length of the call's axis in its result, for an input of length in
// there.
func (c Call) OutLen(in int) int {
	if c.Fn == FnRFFT || c.Fn == FnIHFFT {
		return c.N/2 + 1
	}
	return c.N
}

// InLen returns how many values along its axis the call reads: N, or N/2+1 for the inverse
// real transforms. Shorter inputs are padded with zeros.
func (c Call) InLen() int {
	if c.Fn == FnIRFFT || c.Fn == FnHFFT {
		return c.N/2 + 1
	}
	return c.N
}

// NewCall applies c to a along c.Axis, giving an array of dtype dt. a must have one chunk
// along the axis, at most as long as the function reads (c.InLen: callers crop and rechunk
// first; a shorter axis is padded with zeros).
func NewCall(a *Node, c Call, dt DType) (*Node, error) {
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
	shape := slices.Clone(a.Shape)
	shape[c.Axis] = c.OutLen(a.Shape[c.Axis])
	chunks := cloneChunks(a.Chunks)
	chunks[c.Axis] = []int{shape[c.Axis]}
	cc := c
	return &Node{Kind: KCall, DType: dt, Shape: shape, Chunks: chunks, Args: []*Node{a}, Call: &cc}, nil
}

// OwnStage reports whether n is computed in a stage of its own, before the nodes that read it
// (which then read its values as data): reductions and library calls, which cannot be fused
// into the elementwise pass of their readers.
func (n *Node) OwnStage() bool { return n.Kind == KReduce || n.Kind == KCall }
