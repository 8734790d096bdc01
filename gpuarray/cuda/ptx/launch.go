package ptx

import "fmt"

// Launch shape of fused kernels. The block size and the elements per block are fixed, not
// taken from the device, so a task's partial result is computed in the same order (and so to
// the same bits) on every GPU.
const (
	// BlockSize is the number of threads of a fused kernel's block.
	BlockSize = 256
	// ElemsPerBlock is the target number of elements one block handles (256 per thread).
	ElemsPerBlock = BlockSize * 256
	// MaxSlices is the most blocks one task is split into (the grid's x extent).
	MaxSlices = 1 << 16
	// MaxTasksPerLaunch is the most tasks one launch covers (the grid's y extent).
	MaxTasksPerLaunch = 65535
)

// Slices returns how many blocks a task of m elements is split into: ceil(m/ElemsPerBlock),
// at least 1 for a non-empty task, at most MaxSlices. Slice b covers elements
// [m*b/S, m*(b+1)/S).
func Slices(m int64) int {
	if m <= 0 {
		return 0
	}
	s := (m + ElemsPerBlock - 1) / ElemsPerBlock
	if s > MaxSlices {
		s = MaxSlices
	}
	return int(s)
}

// SliceRange returns the element range [lo, hi) of slice b of a task of m elements in s slices.
func SliceRange(m int64, s, b int) (lo, hi int64) {
	return mulDiv(m, b, s), mulDiv(m, b+1, s)
}

// mulDiv is m*b/s without overflow for m < 2^47 and b <= s <= 2^16 (as the kernel computes it).
func mulDiv(m int64, b, s int) int64 { return int64(uint64(m) * uint64(b) / uint64(s)) }

// DescWords returns the 64-bit words of one task's descriptor for rank r and l leaves: dims[r],
// the slice count, the output offset, then for each leaf its buffer address, offset and
// strides[r].
func DescWords(r, l int) int { return r + 2 + l*(r+2) }

// SpecDescWords returns the words of one task's descriptor for s: descWords, and for a
// mirrored spec of stored inputs (Spec.storedMirror) one more, last, the task's MirrorBase.
func SpecDescWords(s *Spec) int {
	w := DescWords(s.Rank, s.Leaves())
	if s.StoredMirror() {
		w++
	}
	return w
}

// Launch is one kernel launch over a batch of tasks.
type Launch struct {
	First, Count int // tasks [First, First+Count)
	GridX        int // the largest slice count in the batch
}

// PlanLaunches splits tasks into launches of at most MaxTasksPerLaunch tasks and at most
// maxOut output words (store kernels, whose outputs must fit the device memory budget; 0 means
// no limit). It returns, for each task, its output offset (in elements for RNone, in partial
// slots otherwise) counted from the start of its launch.
func PlanLaunches(elems []int64, reduce Reduce, maxOut int64) ([]Launch, []int64, error) {
	var ls []Launch
	offs := make([]int64, len(elems))
	cur := Launch{}
	var used int64
	for i, m := range elems {
		var need int64
		if reduce == RNone {
			need = m
		} else {
			need = int64(Slices(m) * reduce.words())
		}
		if maxOut > 0 && need > maxOut {
			return nil, nil, fmt.Errorf("one chunk's output (%d elements) exceeds the device memory budget (%d elements): use smaller chunks", need, maxOut)
		}
		if cur.Count == MaxTasksPerLaunch || (maxOut > 0 && used+need > maxOut) {
			ls = append(ls, cur)
			cur = Launch{First: i}
			used = 0
		}
		if reduce == RNone {
			offs[i] = used
		} else {
			offs[i] = used / int64(reduce.words())
		}
		used += need
		cur.Count++
		if s := Slices(m); s > cur.GridX {
			cur.GridX = s
		}
	}
	if cur.Count > 0 {
		ls = append(ls, cur)
	}
	return ls, offs, nil
}
