package cuda

import (
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// The kernel spec and the launch geometry are the PTX generator's (package cuda/ptx); these
// names keep the runtime's API where its callers know it.

// Spec is the shape of a fused chunk kernel (see ptx.Spec).
type Spec = ptx.Spec

// Node is one value of a fused element computation (see ptx.Node).
type Node = ptx.Node

// NodeKind is the kind of a kernel-spec node (see ptx.NodeKind).
type NodeKind = ptx.NodeKind

// Reduce is what a kernel does with its elements (see ptx.Reduce).
type Reduce = ptx.Reduce

// Node kinds of a kernel spec (see ptx.NConst).
const (
	NConst  = ptx.NConst
	NRandom = ptx.NRandom
	NInput  = ptx.NInput
	NUnary  = ptx.NUnary
	NBinary = ptx.NBinary
	NWhere  = ptx.NWhere
	NCast   = ptx.NCast
	NRange  = ptx.NRange
	NSearch = ptx.NSearch
)

// Reductions of a kernel spec (see ptx.RNone).
const (
	RNone    = ptx.RNone
	RSum     = ptx.RSum
	RMin     = ptx.RMin
	RMax     = ptx.RMax
	RArgMin  = ptx.RArgMin
	RArgMax  = ptx.RArgMax
	RWelford = ptx.RWelford
	RCount   = ptx.RCount
)

// Launch geometry of the fused kernels (see ptx.BlockSize).
const (
	BlockSize         = ptx.BlockSize
	ElemsPerBlock     = ptx.ElemsPerBlock
	MaxSlices         = ptx.MaxSlices
	MaxTasksPerLaunch = ptx.MaxTasksPerLaunch
)

// Slices returns how many blocks a task of m elements is split into (see ptx.Slices).
func Slices(m int64) int { return ptx.Slices(m) }

// SliceRange returns the elements [lo, hi) of slice b of s of a task of m (see ptx.SliceRange).
func SliceRange(m int64, s, b int) (lo, hi int64) { return ptx.SliceRange(m, s, b) }

// GeneratePTX returns the PTX of s's kernel against the device library libPTX (see
// ptx.GeneratePTX).
func GeneratePTX(s *Spec, libPTX string) (ptxText, name string, err error) {
	return ptx.GeneratePTX(s, libPTX)
}

// Words returns how many 64-bit words an element of dt takes (see ptx.Words).
func Words(dt dtype.DType) int { return ptx.Words(dt) }

// EncodeWords returns s's elements in the kernels' 8-byte word format (see ptx.EncodeWords).
func EncodeWords(s dtype.Slice) []float64 { return ptx.EncodeWords(s) }

// EncodeNarrow returns s's elements in their own size (see ptx.EncodeNarrow).
func EncodeNarrow(s dtype.Slice) []float64 { return ptx.EncodeNarrow(s) }

// DecodeNarrow returns n elements of dt from narrow words w (see ptx.DecodeNarrow).
func DecodeNarrow(w []float64, n int, dt dtype.DType) dtype.Slice { return ptx.DecodeNarrow(w, n, dt) }

// DecodeWords returns the elements of dt in words w (see ptx.DecodeWords).
func DecodeWords(w []float64, dt dtype.DType) dtype.Slice { return ptx.DecodeWords(w, dt) }

// TableOnGPU reports whether op's elementwise code is generated on the GPU (see
// ptx.TableOnGPU).
func TableOnGPU(op expr.Op) bool { return ptx.TableOnGPU(op) }
