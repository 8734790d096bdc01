package cuda

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/internal/gcwait"
)

// DefaultMemoryFraction is the share of a device's memory the pool may hold; past it, store
// kernels work in batches whose results are copied out to pinned host memory
// (GPUNOTES_GPU_MEMORY_FRACTION overrides it).
const DefaultMemoryFraction = 0.8

// Pool is a per-device allocator with stream-ordered reuse: a freed block goes back to a free
// list of its size class and is handed out again for later work on the same stream, which the
// stream orders after the work that used it. It is used on the device goroutine only.
type Pool struct {
	limit  uint64
	inUse  uint64 // bytes handed out
	cached uint64 // bytes on free lists
	free   map[uint64][]driver.DevicePtr
	size   map[driver.DevicePtr]uint64
	stream driver.Stream

	// later holds blocks given back from other goroutines (FreeLater), freed on the next Alloc.
	laterMu sync.Mutex
	later   []driver.DevicePtr
}

func newPool(total uint64, s driver.Stream) (*Pool, error) {
	frac := DefaultMemoryFraction
	if v := os.Getenv("GPUNOTES_GPU_MEMORY_FRACTION"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil || f <= 0 || f > 1 {
			return nil, fmt.Errorf("GPUNOTES_GPU_MEMORY_FRACTION=%q: want a number in (0, 1]", v)
		}
		frac = f
	}
	return &Pool{limit: uint64(float64(total) * frac), free: map[uint64][]driver.DevicePtr{}, size: map[driver.DevicePtr]uint64{}, stream: s}, nil
}

// Limit returns the most bytes the pool hands out.
func (p *Pool) Limit() uint64 { return p.limit }

// Available returns the bytes the pool may still hand out.
func (p *Pool) Available() uint64 { return p.limit - min(p.limit, p.inUse) }

// InUse returns the bytes handed out and not yet freed.
func (p *Pool) InUse() uint64 { return p.inUse }

// sizeClass rounds n up so freed blocks fit later asks: to a power of two (at least 256 bytes)
// up to 1 MiB, and above that to a multiple of an eighth of the power of two below n, so a
// large block (an 800 MB chunk) wastes at most an eighth, not up to half.
func sizeClass(n uint64) uint64 {
	c := uint64(256)
	for c < n {
		c <<= 1
	}
	if c <= 1<<20 {
		return c
	}
	step := c / 16 // c/2 is the power of two below n; a step of an eighth of it
	return (n + step - 1) / step * step
}

// FreeLater gives a block back from any goroutine (a finalizer's, say); the pool frees it on
// the device goroutine at its next Alloc.
func (p *Pool) FreeLater(ptrs ...driver.DevicePtr) {
	p.laterMu.Lock()
	p.later = append(p.later, ptrs...)
	p.laterMu.Unlock()
}

// drainLater frees the blocks given to FreeLater and reports whether there were any.
func (p *Pool) drainLater() bool {
	p.laterMu.Lock()
	l := p.later
	p.later = nil
	p.laterMu.Unlock()
	for _, ptr := range l {
		p.Free(ptr)
	}
	return len(l) > 0
}

// Reclaim runs the garbage collector so that arrays nobody holds give their device memory
// back (through FreeLater), waits until the cleanups of every array unreachable by then have
// run (gcwait.Collect: not only the first one, and not on a clock), and trims the cache. It
// repeats while a round gives memory back (an array freed by another's cleanup), at most
// reclaimRounds times.
func (p *Pool) Reclaim() {
	for range reclaimRounds {
		gcwait.Collect()
		if !p.drainLater() {
			break
		}
	}
	p.Trim()
}

// reclaimRounds bounds Reclaim's rounds of collection.
const reclaimRounds = 3

// Alloc returns a device block of at least n bytes.
func (p *Pool) Alloc(n uint64) (driver.DevicePtr, error) {
	p.drainLater()
	c := sizeClass(n)
	if l := p.free[c]; len(l) > 0 {
		ptr := l[len(l)-1]
		p.free[c] = l[:len(l)-1]
		p.cached -= c
		p.inUse += c
		return ptr, nil
	}
	if p.inUse+p.cached+c > p.limit {
		p.Trim()
	}
	if p.inUse+c > p.limit {
		p.Reclaim()
	}
	if p.inUse+c > p.limit {
		return 0, p.oom(n, nil)
	}
	ptr, err := driver.MemAlloc(c)
	if driver.IsCode(err, driver.ErrorOutOfMemory) {
		p.Trim()
		ptr, err = driver.MemAlloc(c)
	}
	if driver.IsCode(err, driver.ErrorOutOfMemory) {
		p.Reclaim()
		ptr, err = driver.MemAlloc(c)
	}
	if err != nil {
		return 0, p.oom(n, err)
	}
	p.size[ptr] = c
	p.inUse += c
	return ptr, nil
}

// ErrOutOfMemory is wrapped by the errors of allocations the device's memory cannot hold, so
// that holders of device memory (a cluster worker's kept chunks) can make room and retry.
var ErrOutOfMemory = errors.New("out of GPU memory")

func (p *Pool) oom(n uint64, cause error) error {
	free, total, _ := driver.MemGetInfo()
	msg := fmt.Errorf("%w: asked for %s; the pool holds %s of its limit %s, the device has %s free of %s; use smaller chunks, Release arrays held on the GPU that you no longer need, or raise GPUNOTES_GPU_MEMORY_FRACTION",
		ErrOutOfMemory, human(n), human(p.inUse), human(p.limit), human(free), human(total))
	if cause != nil {
		return fmt.Errorf("%w: %w", msg, cause)
	}
	return msg
}

// Free returns a block to the pool for reuse by later work on the pool's stream.
func (p *Pool) Free(ptr driver.DevicePtr) {
	c, ok := p.size[ptr]
	if !ok {
		return
	}
	p.inUse -= c
	p.cached += c
	p.free[c] = append(p.free[c], ptr)
}

// Trim waits for the stream and releases every cached block to the driver.
func (p *Pool) Trim() {
	if p.cached == 0 {
		return
	}
	_ = p.stream.Synchronize()
	for c, l := range p.free {
		for _, ptr := range l {
			_ = driver.MemFree(ptr)
			delete(p.size, ptr)
		}
		delete(p.free, c)
	}
	p.cached = 0
}

func human(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.1f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}
