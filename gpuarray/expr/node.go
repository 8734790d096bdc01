package expr

import (
	"fmt"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// DType is an element type (see gpuarray/dtype).
type DType = dtype.DType

// The element types.
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

// Promote returns the dtype of an operation on arrays of dtypes a and b (NumPy 2's rules).
func Promote(a, b DType) DType { return dtype.Promote(a, b) }

// Kind is a node's kind.
type Kind uint8

// Node kinds.
const (
	KConst     Kind = iota // every element Value
	KRandom                // random numbers, Rand
	KRange                 // Start + Step*i, i the row-major linear index (Arange, Linspace)
	KData                  // a materialized row-major buffer: Data, or Buf (values held on a device)
	KUnary                 // Op(Args[0])
	KBinary                // Op(Args[0], Args[1]), operands broadcast to Shape
	KWhere                 // Args[0] != 0 ? Args[1] : Args[2]
	KCast                  // Args[0] rounded to DType
	KView                  // Args[0] indexed through Map (slice, integer index, transpose, broadcast, rechunk)
	KReduce                // Red over Axes of Args[0]
	KReshape               // Args[0] with Shape, same row-major order (computed first; see NewReshape)
	KConcat                // Args joined along axis Axes[0]
	KTake                  // Args[0] indexed along axis Axes[0] by the 1-d integer array Args[1]
	KTakeAlong             // Args[0] indexed along axis Axes[0] by Args[1], element by element
	KMask                  // the elements of Args[0] where Args[1] is nonzero; length unknown (see NewMask)
	KCall                  // Call: a library function of Args[0] along one axis (FFT), see call.go
	KFile                  // values read from File, chunk by chunk, inside tasks (file.go)
	KSearch                // where Args[1]'s values go in the ascending 1-d Args[0]; Axes[0] 1: after ties (see NewSearch)
)

// Op is an elementwise operation.
type Op uint8

func (o Op) String() string {
	if int(o) < len(opNames) {
		return opNames[o]
	}
	if g, ok := o.gen(); ok {
		return g.name
	}
	return fmt.Sprintf("op(%d)", uint8(o))
}

// Unary reports whether o takes one operand.
func (o Op) Unary() bool {
	if g, ok := o.gen(); ok {
		return g.arity == 1
	}
	return o <= OpTanh
}

// Comparison reports whether o compares its operands (and gives Bool).
func (o Op) Comparison() bool { return o >= OpEq && o <= OpGe }

// Transcendental reports whether o gives a floating-point result for integer operands.
func (o Op) Transcendental() bool {
	switch o {
	case OpExp, OpLog, OpSqrt, OpSin, OpCos, OpTanh, OpDiv:
		return true
	}
	return false
}

// FloatFor returns the floating-point dtype an op like exp or true division computes in for
// operands of dtype dt: dt itself when it is floating or complex; float32 for bool and the
// 8- and 16-bit integers (NumPy gives float16, which gpuarray does not have; for division,
// float64 as NumPy); float64 for wider integers.
func FloatFor(dt DType, op Op) DType {
	switch {
	case dt.IsFloat() || dt.IsComplex():
		return dt
	case op != OpDiv && dt.Size() <= 2:
		return Float32
	}
	return Float64
}

// Dist is a random distribution.
type Dist uint8

// Distributions: Normal(P0 = loc, P1 = scale), Uniform(P0 = low, P1 = high),
// Integers(P0 = low, P1 = high, integers in [low, high)), Exponential(P0 = scale),
// Gamma(P0 = shape, P1 = scale), Poisson(P0 = mean), Binomial(P0 = n, P1 = p),
// Beta(P0 = a, P1 = b, both <= 1: Johnk's method; larger ones are a ratio of gammas).
const (
	Normal Dist = iota
	Uniform
	Integers
	Exponential
	Gamma
	Poisson
	Binomial
	Beta
	// LastDist is the last distribution.
	LastDist = Beta
)

func (d Dist) String() string {
	if d > LastDist {
		return fmt.Sprintf("dist(%d)", uint8(d))
	}
	return [...]string{"normal", "uniform", "integers", "exponential", "gamma", "poisson", "binomial", "beta"}[d]
}

// Integral reports whether d draws integers (int64 arrays by default).
func (d Dist) Integral() bool { return d == Integers || d == Poisson || d == Binomial }

// RandSpec is what a random node draws: the distribution, its parameters and the Philox key
// (see package gpuarray/rng).
type RandSpec struct {
	Dist   Dist
	P0, P1 float64
	Key    [2]uint32
}

// Red is a reduction.
type Red uint8

// Reductions.
const (
	Sum Red = iota
	Mean
	Var
	Std
	Min
	Max
	ArgMin
	ArgMax
)

func (r Red) String() string {
	return [...]string{"sum", "mean", "var", "std", "min", "max", "argmin", "argmax"}[r]
}

// AxisMap says how one axis of a view's input is indexed from the view's output index o:
// input index = Off + Step*o[Axis], or Off alone when Axis is -1 (an integer index, or a
// broadcast axis of length 1).
type AxisMap struct {
	Axis int
	Off  int
	Step int
}

// Node is one node of the graph. Nodes are immutable once built.
type Node struct {
	Kind   Kind
	DType  DType
	Shape  []int
	Chunks [][]int // chunk sizes along each axis; they sum to Shape

	Op    Op          // KUnary, KBinary
	Args  []*Node     // operands
	Value float64     // KConst
	Rand  RandSpec    // KRandom
	Start float64     // KRange
	Step  float64     // KRange
	Stop  float64     // KRange: when Exact, the last element is exactly Stop (Linspace)
	Exact bool        // KRange
	Data  dtype.Slice // KData, row-major, of DType
	Buf   Buffer      // KData whose values are held elsewhere (a GPU's memory); Data is nil
	Map   []AxisMap   // KView, one per input axis
	Red   Red         // KReduce
	Axes  []int       // KReduce: reduced axes of Args[0], ascending; KConcat: the join axis
	Call  *Call       // KCall
	File  *File       // KFile
}

// Buffer holds the values of a KData node outside host memory, on a GPU, until they are read.
type Buffer interface {
	// Values returns the values row-major in host memory, copying them there on the first call.
	Values() (dtype.Slice, error)
	// Where says where the values are held, like "gpu 0".
	Where() string
}

// Values returns a KData node's values row-major: Data, or Buf's values copied to the host.
func (n *Node) Values() (dtype.Slice, error) {
	if n.Buf == nil {
		return n.Data, nil
	}
	v, err := n.Buf.Values()
	if err != nil {
		return dtype.Slice{}, fmt.Errorf("values held on %s: %w", n.Buf.Where(), err)
	}
	if v.DType() != n.DType {
		return dtype.Slice{}, fmt.Errorf("values held on %s: %v values for a %v array", n.Buf.Where(), v.DType(), n.DType)
	}
	if int64(v.Len()) != Size(n.Shape) {
		return dtype.Slice{}, fmt.Errorf("values held on %s: %d elements, shape %s needs %d", n.Buf.Where(), v.Len(), ShapeString(n.Shape), Size(n.Shape))
	}
	return v, nil
}

// Size returns the number of elements of shape.
func Size(shape []int) int64 {
	n := int64(1)
	for _, d := range shape {
		n *= int64(d)
	}
	return n
}

// ShapeString formats a shape like NumPy: (3, 4).
func ShapeString(shape []int) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, d := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		if d == Unknown {
			b.WriteString("nan")
			continue
		}
		fmt.Fprint(&b, d)
	}
	if len(shape) == 1 {
		b.WriteByte(',')
	}
	b.WriteByte(')')
	return b.String()
}
