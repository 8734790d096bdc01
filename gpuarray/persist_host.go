package gpuarray

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// hostChunks holds an array persisted in host memory chunk by chunk, as the tasks computed
// them. A CPU task whose box lies within one chunk reads that chunk in place, where a
// row-major array would be copied box by box for every task (bench: BenchmarkIteratePass).
type hostChunks struct {
	grid chunkGrid
	dt   dtype.DType
	offs [][]int

	mu     sync.Mutex
	chunks []dtype.Slice // nil once released
	whole  dtype.Slice   // the row-major array, assembled on first read

	rangeOnce        sync.Once // intRange, computed on its first call
	rangeLo, rangeHi int64
	rangeOK          bool
}

// intRange returns the smallest and largest value of an int32 or int64 array (ok false for
// other dtypes, an empty or released array), scanned once, the chunks in parallel, then kept:
// the values never change.
func (h *hostChunks) intRange() (lo, hi int64, ok bool) {
	h.rangeOnce.Do(func() {
		h.mu.Lock()
		chunks := h.chunks
		h.mu.Unlock()
		if chunks == nil || (h.dt != dtype.Int32 && h.dt != dtype.Int64) {
			return
		}
		los, his := make([]int64, len(chunks)), make([]int64, len(chunks))
		var wg sync.WaitGroup
		sem := make(chan struct{}, runtime.GOMAXPROCS(0))
		for i, c := range chunks {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if h.dt == dtype.Int32 {
					los[i], his[i] = minMaxOf(c.Int32s())
				} else {
					los[i], his[i] = minMaxOf(c.Int64s())
				}
			}()
		}
		wg.Wait()
		h.rangeLo, h.rangeHi = math.MaxInt64, math.MinInt64
		for i := range chunks {
			h.rangeLo, h.rangeHi = min(h.rangeLo, los[i]), max(h.rangeHi, his[i])
		}
		h.rangeOK = h.rangeLo <= h.rangeHi
	})
	return h.rangeLo, h.rangeHi, h.rangeOK
}

// minMaxOf returns the smallest and largest of x (MaxInt64, MinInt64 when empty).
func minMaxOf[T int32 | int64](x []T) (int64, int64) {
	if len(x) == 0 {
		return math.MaxInt64, math.MinInt64
	}
	lo, hi := x[0], x[0]
	for _, v := range x {
		lo, hi = min(lo, v), max(hi, v)
	}
	return int64(lo), int64(hi)
}

// keepOnHost runs the tasks of the last stage of a Persist (one per chunk) with sched and keeps
// each output as it is.
func keepOnHost(ctx context.Context, sched Scheduler, n *expr.Node, tasks []*plan.Task, done func(int)) (*hostChunks, error) {
	outs, err := sched.Run(ctx, tasks, done)
	if err != nil {
		return nil, err
	}
	h := &hostChunks{grid: newChunkGrid(n.Shape, n.Chunks), dt: n.DType}
	for i, t := range tasks {
		if h.grid.index(t.Offset) != i || outs[i] == nil || int64(outs[i].Data.Len()) != expr.Size(t.Shape) {
			return nil, fmt.Errorf("persist: task %d is not chunk %d (internal)", i, i)
		}
		h.offs = append(h.offs, slices.Clone(t.Offset))
		h.chunks = append(h.chunks, outs[i].Data)
	}
	return h, nil
}

var errHostReleased = errors.New("the array's chunks were released (Release) before they were read")

// Where says the chunks are in this process's memory.
func (h *hostChunks) Where() string { return "host" }

// Values assembles the chunks into one row-major array on the first call.
func (h *hostChunks) Values() (dtype.Slice, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !h.whole.IsNil() {
		return h.whole, nil
	}
	if h.chunks == nil {
		return dtype.Slice{}, errHostReleased
	}
	whole := dtype.Make(h.dt, int(expr.Size(h.grid.shape)))
	for i, c := range h.chunks {
		h.grid.place(whole, h.offs[i], h.chunkShape(i), c)
	}
	h.whole = whole
	return whole, nil
}

func (h *hostChunks) chunkShape(i int) []int {
	shape := make([]int, len(h.offs[i]))
	for ax, o := range h.offs[i] {
		j := sort.SearchInts(h.grid.bounds[ax], o+1) - 1
		shape[ax] = h.grid.chunks[ax][j]
	}
	return shape
}

// copied is true: the values are in host memory.
func (h *hostChunks) copied() bool { return true }

func (h *hostChunks) state() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chunks == nil {
		return "released from host memory"
	}
	return "persisted in host memory, chunk by chunk"
}

func (h *hostChunks) placement() []placeBytes {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chunks == nil {
		return nil
	}
	var b int64
	for _, c := range h.chunks {
		b += int64(len(c.Bytes()))
	}
	b += int64(len(h.whole.Bytes()))
	return []placeBytes{{"host", b}}
}

func (h *hostChunks) pin() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.chunks != nil
}

func (h *hostChunks) unpin() {}

// release drops the chunks (tasks that read them hold their own references).
func (h *hostChunks) release() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.chunks, h.whole = nil, dtype.Slice{}
}

// block returns the chunk holding the box [lo, hi] as a block read in place.
func (h *hostChunks) block(lo, hi []int) (plan.Block, bool) {
	i, origin, shape := h.grid.within(lo, hi)
	if i < 0 {
		return plan.Block{}, false
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.chunks == nil {
		return plan.Block{}, false
	}
	return plan.Block{Origin: origin, Shape: shape, Data: h.chunks[i]}, true
}
