package gpuarray

import (
	"context"
	"fmt"
	"runtime"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Uploader is plumbing for package dataframe (its Parquet reads on a GPU): it copies chunks of
// 1-d arrays from host memory to the GPUs of a Compute option through each device's pinned
// staging buffers (cuda.Device.CopyToDevice), one chunk at a time, so that a reader can decode
// the next chunk on the host while one moves and never holds a whole column. HeldArray makes
// an array held there of the chunks.
type Uploader struct {
	devs []*cuda.Device
	ctx  context.Context
}

// DeviceChunk is one chunk that an Uploader copied to a GPU. It owns its device memory until
// HeldArray takes it or Free gives it back.
type DeviceChunk struct {
	dev    *cuda.Device
	ptr    driver.DevicePtr
	n      int
	dt     dtype.DType
	narrow bool
}

// NewUploader returns an Uploader to the GPUs that opts name (OnGPU; OnGPUs deals chunk part
// to GPU part mod n, as Persist deals row chunks).
func NewUploader(opts ...ComputeOption) (*Uploader, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, fmt.Errorf("NewUploader: %w", err)
	}
	g, ok := cfg.sched.(*gpuSched)
	if !ok || len(g.devs) == 0 {
		return nil, fmt.Errorf("NewUploader: needs a GPU scheduler (OnGPU)")
	}
	ctx := cfg.ctx
	if ctx == nil {
		ctx = context.Background()
	}
	return &Uploader{devs: g.devs, ctx: ctx}, nil
}

// Upload copies v, chunk part of an array, to its GPU and returns it there once the copy is
// complete: v may be reused afterwards. Values are held as Persist holds them (float32, bools
// and integers of 1 to 4 bytes in their own size, others as 8-byte words). Safe for
// concurrent use; the copies of one GPU run one after another on its goroutine.
func (u *Uploader) Upload(v dtype.Slice, part int) (*DeviceChunk, error) {
	dev := u.devs[part%len(u.devs)]
	dt := v.DType()
	c := &DeviceChunk{dev: dev, n: v.Len(), dt: dt, narrow: narrowStore && cuda.Narrow(dt)}
	words, tail := uploadWords(v, c.narrow)
	size := uint64(len(words)+len(tail)) * 8
	err := dev.Do(u.ctx, func() error {
		p, err := dev.Pool().Alloc(max(size, 8))
		if err != nil {
			return err
		}
		if err := dev.CopyToDevice(p, words); err != nil {
			dev.Pool().Free(p)
			return err
		}
		if err := dev.CopyToDevice(p+driver.DevicePtr(len(words)*8), tail); err != nil {
			dev.Pool().Free(p)
			return err
		}
		c.ptr = p
		return nil
	})
	runtime.KeepAlive(v)
	if err != nil {
		return nil, fmt.Errorf("upload chunk %d (%d %v) to gpu %d: %w", part, c.n, dt, dev.Info.Index, err)
	}
	return c, nil
}

// uploadWords returns v as the words a GPU holds: v's own memory where its bytes already are
// those words (float64 and int64 values; narrow values from an 8-byte aligned address), with a
// last, zero-padded word of a narrow chunk in tail; else an encoded copy.
func uploadWords(v dtype.Slice, narrow bool) (words, tail []float64) {
	if v.Len() == 0 {
		return nil, nil
	}
	b := v.Bytes()
	aligned := uintptr(unsafe.Pointer(&b[0]))%8 == 0
	switch {
	case v.DType() == dtype.Float64 || v.DType() == dtype.Int64 && aligned:
		return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), len(b)/8), nil
	case narrow && aligned:
		whole := len(b) / 8
		if whole > 0 {
			words = unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), whole)
		}
		if rest := b[whole*8:]; len(rest) > 0 {
			tail = make([]float64, 1)
			copy(unsafe.Slice((*byte)(unsafe.Pointer(&tail[0])), 8), rest)
		}
		return words, tail
	case narrow:
		return cuda.EncodeNarrow(v), nil
	}
	return cuda.EncodeWords(v), nil
}

// Len is the chunk's number of elements.
func (c *DeviceChunk) Len() int { return c.n }

// Free gives the chunk's device memory back (unless HeldArray took it).
func (c *DeviceChunk) Free() {
	if c == nil || c.ptr == 0 {
		return
	}
	freeOn(c.dev, []driver.DevicePtr{c.ptr})
	c.ptr = 0
}

// HeldArray returns the 1-d array whose chunks are cs, in order, held where Upload put them
// (as Persist's arrays are: fused kernels read them in place); the array owns them from now.
// All chunks have one dtype. Chunks of no elements (an empty row group) are given back, as an
// array's chunks have positive sizes; no chunks give an empty array of dt.
func HeldArray(cs []*DeviceChunk, dt dtype.DType, path string) (*Array, error) {
	var kept []*DeviceChunk
	for _, c := range cs {
		if c != nil && c.n == 0 {
			c.Free()
			continue
		}
		kept = append(kept, c)
	}
	cs = kept
	if len(cs) == 0 {
		r, err := expr.NewData(dtype.Make(dt, 0), []int{0}, [][]int{{0}})
		if err != nil {
			return nil, err
		}
		return &Array{n: r, path: path}, nil
	}
	total := 0
	ns := make([]int, len(cs))
	for i, c := range cs {
		if c.ptr == 0 {
			return nil, fmt.Errorf("HeldArray: chunk %d was freed or taken", i)
		}
		if c.dt != dt || c.narrow != cs[0].narrow {
			return nil, fmt.Errorf("HeldArray: chunk %d is %v, the array %v", i, c.dt, dt)
		}
		ns[i] = c.n
		total += c.n
	}
	shape, chunks := []int{total}, [][]int{ns}
	gc := &gpuChunks{grid: newChunkGrid(shape, chunks), dt: dt, narrow: cs[0].narrow, label: "on"}
	gc.idle.L = &gc.mu
	byDev := map[*cuda.Device]int{}
	at := 0
	for i, c := range cs {
		gc.ptrs, gc.devs, gc.offs = append(gc.ptrs, c.ptr), append(gc.devs, c.dev), append(gc.offs, []int{at})
		at += ns[i]
		j, ok := byDev[c.dev]
		if !ok {
			j = len(gc.allocs)
			byDev[c.dev] = j
			gc.allocs = append(gc.allocs, devAllocs{dev: c.dev})
		}
		gc.allocs[j].ptrs = append(gc.allocs[j].ptrs, c.ptr)
	}
	for _, c := range cs {
		c.ptr = 0 // the array's now
	}
	gc.addCleanup()
	r, err := expr.NewBuffered(gc, shape, chunks)
	if err != nil {
		gc.freeNow()
		return nil, fmt.Errorf("HeldArray: %w", err)
	}
	r.DType = dt
	return &Array{n: r, path: path}, nil
}
