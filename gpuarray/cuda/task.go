package cuda

import (
	"fmt"
	"os"
	"strconv"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Map is how a leaf is indexed from a task's iteration index (i_0, …, i_{Rank-1}): the linear
// index Off + sum_k Strides[k]*i_k, into the random array as created (NRandom: the global
// row-major element index that seeds Philox) or into the leaf's input buffer (NInput).
type Map struct {
	Off     int64
	Strides []int64
}

// Task is one chunk of work for a spec: its iteration space, one Map per leaf, and the data of
// input leaves (Inputs[leaf] in EncodeWords' format, nil for random leaves; InputsNarrow[leaf]
// for a Narrow leaf), or for input leaves that a GPU already holds, where it holds them
// (Held[leaf], in the same format, read in place; nil or zero Ptr otherwise).
type Task struct {
	Dims   []int64
	Maps   []Map
	Inputs [][]float64
	// InputsNarrow[leaf] holds a Narrow leaf's host data: its elements in their own size
	// (EncodeNarrow's bytes), uploaded as they are.
	InputsNarrow [][]byte
	Held         []HeldInput
	// Gathers[leaf], when set, is gathered on the device into the leaf's data (a take).
	Gathers []*Gather
	// MirrorBase is, for a mirrored spec of stored inputs (Spec.storedMirror), the row minus the
	// column of the task's first element in the whole array: the kernel adds its elements'
	// task-local row minus column to it to place them against the array's diagonal.
	MirrorBase int64
	// Files[leaf], when set, is a box of a file read into the leaf's data at upload, through
	// pinned buffers, the file reads overlapping the copies (see uploadFile).
	Files []*plan.Block
}

// HeldInput is an input leaf's data in a GPU's memory: Len elements from Ptr, in EncodeWords'
// format, or in the dtype's own element size when Narrow (an array persisted so, see Narrow).
type HeldInput struct {
	Device int
	Ptr    driver.DevicePtr
	Len    int64
	Narrow bool
	// Copies, when set, join the block from several chunks held on Device (plan.HeldJoin) into
	// a buffer of the launch, which the kernel reads instead of Ptr (joinCopies' units).
	Copies []plan.PieceCopy
	unit   joinUnit // what Copies move per element
}

// heldInput returns the held input of a planned block held on a GPU (b.Held) that a leaf of
// dtype dt reads.
func heldInput(b *plan.Block, dt expr.DType) HeldInput {
	h := HeldInput{Device: b.Held.Device, Ptr: driver.DevicePtr(b.Held.Ptr), Len: expr.Size(b.Shape), Narrow: b.Held.Narrow}
	if b.Held.Join != nil {
		h.Copies, h.unit = joinCopies(b, Words(dt)), heldUnit(b.Held.Narrow, dt)
	}
	return h
}

// input returns the number of elements of input leaf l's data, of dtype dt, and whether it
// has any.
func (t *Task) input(l int, dt expr.DType) (int64, bool) {
	if l < len(t.Held) && t.Held[l].Ptr != 0 {
		return t.Held[l].Len, true
	}
	if l < len(t.Gathers) && t.Gathers[l] != nil {
		return t.Gathers[l].Len(), true
	}
	if l < len(t.Files) && t.Files[l] != nil {
		return expr.Size(t.Files[l].Shape), true
	}
	if l < len(t.InputsNarrow) && t.InputsNarrow[l] != nil {
		return int64(len(t.InputsNarrow[l]) / dt.Size()), true
	}
	if l < len(t.Inputs) && t.Inputs[l] != nil {
		return int64(len(t.Inputs[l]) / Words(dt)), true
	}
	return 0, false
}

// Elements returns the number of elements of the task's iteration space.
func (t *Task) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= d
	}
	return n
}

func (t *Task) validate(s *Spec) error {
	if len(t.Dims) != s.Rank {
		return fmt.Errorf("task has %d dims, kernel rank is %d", len(t.Dims), s.Rank)
	}
	for _, d := range t.Dims {
		if d < 0 || d > 1<<40 {
			return fmt.Errorf("task dim %d out of range", d)
		}
	}
	if len(t.Maps) < s.Leaves() {
		return fmt.Errorf("task has %d index maps, kernel needs %d", len(t.Maps), s.Leaves())
	}
	for i, m := range t.Maps {
		if len(m.Strides) != s.Rank {
			return fmt.Errorf("task map %d has %d strides, kernel rank is %d", i, len(m.Strides), s.Rank)
		}
	}
	for _, nd := range s.Nodes {
		if nd.Kind == NSearch {
			// The sorted array: its length is the map's offset, every stride 0.
			size, ok := t.input(nd.Leaf, nd.Sorted)
			m := t.Maps[nd.Leaf]
			if !ok && m.Off > 0 || m.Off < 0 || ok && m.Off > size {
				return fmt.Errorf("search leaf %d: a sorted array of %d elements in a buffer of %d", nd.Leaf, m.Off, size)
			}
			for _, st := range m.Strides {
				if st != 0 {
					return fmt.Errorf("search leaf %d: stride %d (the sorted array is read whole)", nd.Leaf, st)
				}
			}
			continue
		}
		if nd.Kind != NInput {
			continue
		}
		size, ok := t.input(nd.Leaf, nd.DType)
		if !ok {
			return fmt.Errorf("task lacks the data of input leaf %d", nd.Leaf)
		}
		// The largest index the map reaches must be inside the buffer.
		m := t.Maps[nd.Leaf]
		lo, hi := m.Off, m.Off
		for k, d := range t.Dims {
			if d == 0 {
				lo, hi = 0, -1
				break
			}
			span := m.Strides[k] * (d - 1)
			if span < 0 {
				lo += span
			} else {
				hi += span
			}
		}
		if hi >= lo && (lo < 0 || hi >= size) {
			return fmt.Errorf("input leaf %d: index map reaches [%d, %d], buffer has %d elements", nd.Leaf, lo, hi, size)
		}
	}
	return nil
}

// mirrorStrip (GPUNOTES_PTX_MIRROR_STRIP=W, an experiment, 0 by default) makes mirrored
// kernels walk each task in strips of about W columns (mirrorStrips), regenerated and stored
// alike, so that their bits stay equal: the stored kernel's lanes then read the mirrored
// block's rows again a row later, from the cache, instead of a whole task row later (persisted
// sum(x + x.T) 27.6 ms on an H100 at N=40000 with row-major tasks, against 9.4 tiled).
var mirrorStrip = func() int64 {
	w, err := strconv.ParseInt(os.Getenv("GPUNOTES_PTX_MIRROR_STRIP"), 10, 64)
	if err != nil || w < 32 {
		return 0
	}
	return w
}()

// mirrorStrips returns the rank-3 task of a mirrored spec (Spec.Rank 3) for t of rank 2 (rows
// ri, columns rj): dims (rj/W, ri, W), W the largest divisor of rj up to w (rj itself, one
// strip, when that is under 32), so element (s, i, c) is t's (i, s*W + c); each map, the
// position's included (MirrorBase), reads what it read there.
func mirrorStrips(t Task, w int64) Task {
	if len(t.Dims) != 2 {
		return t
	}
	ri, rj := t.Dims[0], t.Dims[1]
	W := rj
	for d := min(w, rj); d >= 32; d-- {
		if rj%d == 0 {
			W = d
			break
		}
	}
	out := t
	out.Dims = []int64{rj / W, ri, W}
	out.Maps = make([]Map, len(t.Maps))
	for l, m := range t.Maps {
		out.Maps[l] = Map{Off: m.Off, Strides: []int64{m.Strides[1] * W, m.Strides[0], m.Strides[1]}}
	}
	return out
}
