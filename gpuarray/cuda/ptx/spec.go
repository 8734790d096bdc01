package ptx

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"math"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// NodeKind is the kind of a kernel-spec node.
type NodeKind uint8

// Node kinds of a kernel spec.
const (
	NConst  NodeKind = iota // Value
	NRandom                 // Rand, indexed through the task's map Leaf
	NInput                  // an input buffer, indexed through the task's map Leaf
	NUnary                  // Op(Args[0])
	NBinary                 // Op(Args[0], Args[1])
	NWhere                  // Args[0] != 0 ? Args[1] : Args[2]
	NCast                   // Args[0] rounded to DType
	NRange                  // Value + Step*i at source index i (Stop at index Last with Exact)
	NSearch                 // where float64 Args[0] goes in the ascending buffer of leaf Leaf (see Node.Sorted)
)

// Node is one value of a fused element computation. Nodes refer to earlier nodes by index.
type Node struct {
	Kind  NodeKind
	DType expr.DType // Float32 results are rounded to float32 after the operation
	Op    expr.Op
	Args  [3]int
	Value float64
	Rand  expr.RandSpec
	Leaf  int // NRandom, NInput, NRange: which of the task's Maps indexes it
	// NRange: Value is the start; Stop replaces the value at source index Last when Exact.
	Step, Stop float64
	Last       int64
	Exact      bool
	// SameKey, for an NRandom node, is 1 + the leaf of an earlier random node with the same
	// Philox key (x and x.T, say): the kernel derives the round keys once for both.
	SameKey int
	// Transposed, for an NInput node of a tiled spec (Spec.Tile), says its data run along the
	// iteration's axis Rank-2 (x.T of a stored x): the kernel reads it through shared memory.
	Transposed bool
	// Narrow, for an NInput node of a dtype a GPU keeps in its own element size (see Narrow:
	// float32, bool, the integers of 1 to 4 bytes), or an NSearch node of such a sorted
	// array, says its data are those elements (an array persisted on the GPU, HeldInput.Narrow),
	// widened in registers: the same values, half the bytes read. See narrowInputs.
	Narrow bool
	// Sorted, for an NSearch node, is the dtype of the sorted array its leaf's buffer holds
	// (as EncodeWords writes it); the leaf's map offset is the array's length. The node is the
	// int64 position of Args[0] in it, compared as float64 with NaN last, before equal values
	// or after them with Right (numpy.searchsorted).
	Sorted expr.DType
	Right  bool
}

// OutWords returns how many 64-bit words an elementwise kernel of s writes per element (see
// Words).
func (s *Spec) OutWords() int { return Words(s.Nodes[len(s.Nodes)-1].DType) }

// leaf reports whether nodes of kind k are indexed through a task's Map.
func (k NodeKind) IsLeaf() bool { return k == NRandom || k == NInput || k == NRange || k == NSearch }

// Reduce is what a fused kernel does with the value of its last node.
type Reduce uint8

// Reductions of a kernel spec. RNone stores every element; the others leave one partial per
// task (Welford: count, mean and M2, from which mean, var and std follow).
const (
	RNone Reduce = iota
	RSum
	RMin
	RMax
	RArgMin
	RArgMax
	RWelford
	// RCount counts the value of the last node, an integer in [0, Spec.Bins), into the task's
	// Bins int64 counters (a bincount: see ptxgen_count.go and Device.Count).
	RCount
)

func (r Reduce) String() string {
	return [...]string{"none", "sum", "min", "max", "argmin", "argmax", "welford", "count"}[r]
}

// words returns how many 64-bit words one partial takes.
func (r Reduce) words() int {
	switch r {
	case RArgMin, RArgMax:
		return 2
	case RWelford:
		return 3
	}
	return 1
}

// Spec is the shape of a fused chunk kernel: the element computation over a task's iteration
// space of Rank dimensions, and what happens to the result. Sizes, offsets and strides are not
// part of it (they come with each Task), so one compiled kernel serves every chunk.
type Spec struct {
	Rank   int
	Nodes  []Node
	Reduce Reduce
	// Kept, when above 0, makes the reduction partial: a task's first Kept axes are kept and
	// the others reduced, one partial per kept element (see GeneratePTX). Lower orders a
	// planned task's axes so.
	Kept int
	// Rows makes a partial reduction walk each kept element's reduced run with a warp (lanes on
	// neighbouring elements, combined by shuffles in a fixed order) instead of one thread: for
	// reductions over the innermost axis, whose runs are contiguous.
	Rows bool
	// Short makes a partial reduction whose reduced runs are short (at most axesMaxShort
	// elements) walk each kept element's whole run with one thread, in element order: a block
	// takes BlockSize neighbouring kept elements, one slice each, no merge, and for a big result
	// each thread then the kept elements a grid's width on (shortPerThread). (The block walk
	// spreads a run over eight warps: for a run of 2 it left most threads idle, and the index
	// arithmetic of every thread was paid for a value or two.)
	Short bool
	// Tile makes a full reduction or an elementwise kernel walk square tiles of the last two
	// axes, reading its Transposed inputs through shared memory, so that both the inputs that
	// run along the last axis and those that run along the one before are read in whole
	// sectors (see generateTiled).
	Tile bool
	// Mirror, when set, holds the nodes of the two reads of one square array of a mirrored
	// full reduction, the straight one first (see mirrorLeaves): an element above the diagonal
	// (row < column) folds in its own value and its mirror's, one below it reads nothing. The
	// two are random leaves (the array regenerated) or input leaves (the array stored: the
	// straight one reads the task's block, the other the block mirrored across the diagonal,
	// and the task's descriptor places the task against the diagonal, Task.MirrorBase).
	Mirror []int
	// NarrowOut makes an elementwise (RNone) kernel of a result of a Narrow dtype write its
	// elements in their own size instead of 8-byte words, each task's from an 8-byte aligned
	// element offset (narrowAlign): how such an array persisted on the GPU is stored
	// (RunPlanKeepNarrow).
	NarrowOut bool
	// Bins is the number of counters of an RCount kernel.
	Bins int
}

// Leaves returns how many index maps a task of s must carry (one per distinct Leaf).
func (s *Spec) Leaves() int {
	n := 0
	for _, nd := range s.Nodes {
		if nd.Kind.IsLeaf() && nd.Leaf+1 > n {
			n = nd.Leaf + 1
		}
	}
	return n
}

// Validate checks that s is well formed.
func (s *Spec) Validate() error {
	if s.Rank < 1 || s.Rank > 8 {
		return fmt.Errorf("kernel spec: rank %d out of range 1..8", s.Rank)
	}
	if len(s.Nodes) == 0 {
		return fmt.Errorf("kernel spec: no nodes")
	}
	if s.Reduce > RCount {
		return fmt.Errorf("kernel spec: unknown reduction %d", s.Reduce)
	}
	if err := s.validCount(); err != nil {
		return err
	}
	if s.Kept < 0 || s.Kept >= s.Rank || (s.Kept > 0 && s.Reduce == RNone) || (s.Rows && s.Kept == 0) || (s.Short && (s.Kept == 0 || s.Rows)) {
		return fmt.Errorf("kernel spec: %d kept axes of %d for reduction %v", s.Kept, s.Rank, s.Reduce)
	}
	if s.NarrowOut && (s.Reduce != RNone || !Narrow(s.Nodes[len(s.Nodes)-1].DType)) {
		return fmt.Errorf("kernel spec: narrow output of a %v %v kernel (only elementwise results of float32, bool and integers of 1 to 4 bytes)", s.Nodes[len(s.Nodes)-1].DType, s.Reduce)
	}
	transposed := 0
	for _, nd := range s.Nodes {
		if nd.Narrow && (nd.Kind != NInput || !Narrow(nd.DType)) && (nd.Kind != NSearch || !Narrow(nd.Sorted)) {
			return fmt.Errorf("kernel spec: a narrow %v node of kind %d (only inputs of float32, bool and integers of 1 to 4 bytes are stored narrow)", nd.DType, nd.Kind)
		}
		if nd.Transposed {
			if nd.Kind != NInput || Words(nd.DType) != 1 {
				return fmt.Errorf("kernel spec: a transposed %v node of kind %d (only real inputs read through tiles)", nd.DType, nd.Kind)
			}
			transposed++
		}
	}
	if s.Tile != (transposed > 0) || s.Tile && (s.Kept > 0 || s.Rank < 2 || s.Reduce == RArgMin || s.Reduce == RArgMax || UnrollOf(s) == 1) {
		return fmt.Errorf("kernel spec: tiles (%v) for %d transposed inputs, rank %d, %d kept axes, reduction %v", s.Tile, transposed, s.Rank, s.Kept, s.Reduce)
	}
	for i, nd := range s.Nodes {
		nargs := 0
		switch nd.Kind {
		case NConst:
		case NRandom:
			if nd.Rand.Dist > expr.LastDist {
				return fmt.Errorf("kernel spec: node %d: unknown distribution %d", i, nd.Rand.Dist)
			}
		case NInput, NRange:
		case NUnary:
			if !nd.Op.Unary() {
				return fmt.Errorf("kernel spec: node %d: %v is not unary", i, nd.Op)
			}
			nargs = 1
		case NBinary:
			if _, gen := nd.Op.Generated(); nd.Op.Unary() || nd.Op > expr.OpGe && !gen {
				return fmt.Errorf("kernel spec: node %d: %v is not binary", i, nd.Op)
			}
			nargs = 2
		case NWhere:
			nargs = 3
		case NCast:
			nargs = 1
		case NSearch:
			if nd.DType != expr.Int64 || Words(nd.Sorted) != 1 {
				return fmt.Errorf("kernel spec: node %d: a search of %v values giving %v", i, nd.Sorted, nd.DType)
			}
			nargs = 1
		default:
			return fmt.Errorf("kernel spec: node %d: unknown kind %d", i, nd.Kind)
		}
		for a := 0; a < nargs; a++ {
			if nd.Args[a] < 0 || nd.Args[a] >= i {
				return fmt.Errorf("kernel spec: node %d: operand %d refers to node %d, not an earlier one", i, a, nd.Args[a])
			}
		}
		if nd.Kind.IsLeaf() && nd.Leaf < 0 {
			return fmt.Errorf("kernel spec: node %d: negative leaf", i)
		}
	}
	if s.Mirror != nil {
		if err := s.validMirror(); err != nil {
			return err
		}
	}
	return nil
}

// Key returns a hash that identifies s: equal keys mean the same generated kernel. Random
// leaves' Philox keys are left out: the kernel reads them from the task descriptor.
func (s *Spec) Key() string {
	h := sha256.New()
	w := func(v uint64) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	w(uint64(s.Rank))
	w(uint64(s.Reduce))
	w(uint64(s.Kept))
	if s.Rows {
		w(1)
	}
	if s.Short {
		w(3)
	}
	w(boolWord(s.Tile))
	if s.NarrowOut {
		w(2)
	}
	for _, m := range s.Mirror {
		w(uint64(m) + 1)
	}
	if s.Reduce == RCount {
		w(uint64(s.Bins))
	}
	for _, nd := range s.Nodes {
		w(uint64(nd.Kind)<<32 | uint64(nd.DType)<<16 | uint64(nd.Op))
		for _, a := range nd.Args {
			w(uint64(a))
		}
		w(math.Float64bits(nd.Value))
		w(uint64(nd.Rand.Dist))
		w(math.Float64bits(nd.Rand.P0))
		w(math.Float64bits(nd.Rand.P1))
		// Not the random key: it reaches the kernel in the task descriptor, so a new seed
		// reuses the linked kernel.
		w(uint64(nd.Leaf))
		w(uint64(nd.SameKey))
		w(boolWord(nd.Transposed))
		if nd.Narrow {
			w(3)
		}
		if nd.Kind == NSearch {
			w(uint64(nd.Sorted)<<1 | boolWord(nd.Right))
		}
		if nd.Kind == NRange {
			w(math.Float64bits(nd.Step))
			w(math.Float64bits(nd.Stop))
			w(uint64(nd.Last))
			if nd.Exact {
				w(1)
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

func boolWord(b bool) uint64 {
	if b {
		return 1
	}
	return 0
}

// validMirror checks a mirrored spec (Mirror): a rank-2 full reduction (rank 3: its tasks
// walk strips of columns, mirrorStrips) other than
// argmin/argmax whose only leaves are the two nodes Mirror names, both random or both inputs
// of 8-byte words.
func (s *Spec) validMirror() error {
	if len(s.Mirror) != 2 || (s.Rank != 2 && s.Rank != 3) || s.Kept > 0 || s.Tile || (s.Reduce != RSum && s.Reduce != RMin && s.Reduce != RMax && s.Reduce != RWelford) {
		return fmt.Errorf("kernel spec: mirror %v of a rank-%d %v reduction with %d kept axes", s.Mirror, s.Rank, s.Reduce, s.Kept)
	}
	for _, m := range s.Mirror {
		if m < 0 || m >= len(s.Nodes) {
			return fmt.Errorf("kernel spec: mirror node %d of %d", m, len(s.Nodes))
		}
		nd := &s.Nodes[m]
		if nd.Kind != s.Nodes[s.Mirror[0]].Kind || (nd.Kind != NRandom && (nd.Kind != NInput || nd.Narrow || nd.Transposed || Words(nd.DType) != 1)) {
			return fmt.Errorf("kernel spec: mirror node %d is not a random leaf or a stored input of 8-byte words like node %d", m, s.Mirror[0])
		}
	}
	for i, nd := range s.Nodes {
		if nd.Kind.IsLeaf() && i != s.Mirror[0] && i != s.Mirror[1] {
			return fmt.Errorf("kernel spec: mirrored spec with another leaf (node %d)", i)
		}
	}
	return nil
}

// StoredMirror reports whether s is mirrored (Mirror) over stored inputs, whose tasks carry
// their place against the diagonal (Task.MirrorBase).
func (s *Spec) StoredMirror() bool {
	return len(s.Mirror) == 2 && s.Mirror[0] < len(s.Nodes) && s.Nodes[s.Mirror[0]].Kind == NInput
}

// Narrow reports whether a GPU keeps an array of dtype dt in its own element size, dt.Size()
// bytes (RunPlanKeepNarrow, EncodeNarrow): float32, bool and the integers of 1, 2 and 4 bytes
// do; other dtypes are kept in EncodeWords' format (8-byte words, two for complex values).
func Narrow(dt dtype.DType) bool {
	switch dt {
	case dtype.Float32, dtype.Bool, dtype.Int8, dtype.Int16, dtype.Int32, dtype.Uint8, dtype.Uint16, dtype.Uint32:
		return true
	}
	return false
}
