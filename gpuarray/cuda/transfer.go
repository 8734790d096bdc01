package cuda

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
)

// Large transfers go through two pinned staging buffers of transferPiece bytes: the DMA of one
// piece runs while the host copies the other between the staging buffer and Go memory on
// several cores. Copies straight from pageable Go memory ran at about 3 GB/s on the H100
// machine (cupy's .get() of 12.8 GB took 4.0 s), well below the link.
const transferPiece = 64 << 20

// transferDirect is the size below which a plain synchronous copy is used.
const transferDirect = 4 << 20

// stagingPair returns the device's two pinned transfer buffers, allocated on first use.
func (d *Device) stagingPair() ([2][]float64, error) {
	if d.xfer[0] == nil {
		for i := range d.xfer {
			p, err := driver.MemAllocHost(transferPiece)
			if err != nil {
				return d.xfer, fmt.Errorf("pinned transfer buffer: %w", err)
			}
			d.xfer[i] = unsafe.Slice((*float64)(p), transferPiece/8)
		}
	}
	return d.xfer, nil
}

// parallelCopy copies src into dst (equal lengths) on up to GOMAXPROCS goroutines: first
// touches of fresh Go memory (page faults) dominate large copies and scale with cores.
func parallelCopy(dst, src []float64) {
	const grain = 1 << 18
	w := min(runtime.GOMAXPROCS(0), (len(src)+grain-1)/grain)
	if w <= 1 {
		copy(dst, src)
		return
	}
	var wg sync.WaitGroup
	per := (len(src) + w - 1) / w
	for lo := 0; lo < len(src); lo += per {
		hi := min(lo+per, len(src))
		wg.Add(1)
		go func() {
			defer wg.Done()
			copy(dst[lo:hi], src[lo:hi])
		}()
	}
	wg.Wait()
}

// CopyStream returns a second stream of the device, for copies that overlap the work queued
// on Stream (see CopyToHostOn). Call it on the device goroutine.
func (d *Device) CopyStream() (driver.Stream, error) {
	if d.copyStream == 0 {
		s, err := driver.StreamCreate(driver.StreamNonBlocking)
		if err != nil {
			return 0, fmt.Errorf("copy stream: %w", err)
		}
		d.copyStream = s
	}
	return d.copyStream, nil
}

// CopyToHost copies len(dst) doubles from the device at src into dst, pipelined through
// pinned staging, after the work queued on Stream. Call it on the device goroutine (inside
// Do); it returns when dst is filled.
func (d *Device) CopyToHost(dst []float64, src driver.DevicePtr) error {
	if err := d.stream.Synchronize(); err != nil {
		return err
	}
	return d.CopyToHostOn(d.stream, dst, src)
}

// CopyToHostOn is CopyToHost with the copies queued on stream s (Stream or CopyStream),
// without waiting for other work: with CopyStream, kernels queued on Stream run meanwhile.
// The caller makes sure src is complete.
func (d *Device) CopyToHostOn(s driver.Stream, dst []float64, src driver.DevicePtr) error {
	n := len(dst)
	if n == 0 {
		return nil
	}
	if n*8 <= transferDirect {
		if err := driver.MemcpyDtoHAsync(unsafe.Pointer(&dst[0]), src, uint64(n)*8, s); err != nil {
			return err
		}
		return s.Synchronize()
	}
	st, err := d.stagingPair()
	if err != nil {
		return err
	}
	piece := transferPiece / 8
	prev, prevBuf := -1, 0
	for off, b := 0, 0; off < n; off, b = off+piece, 1-b {
		m := min(piece, n-off)
		if err := driver.MemcpyDtoHAsync(unsafe.Pointer(&st[b][0]), src+driver.DevicePtr(off*8), uint64(m)*8, s); err != nil {
			return err
		}
		if prev >= 0 { // the previous piece is in its buffer: copy it out while this one moves
			parallelCopy(dst[prev:prev+min(piece, n-prev)], st[prevBuf][:min(piece, n-prev)])
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		prev, prevBuf = off, b
	}
	parallelCopy(dst[prev:], st[prevBuf][:n-prev])
	return nil
}

// CopyToDevice copies src to the device at dst, pipelined through pinned staging. Call it on
// the device goroutine (inside Do); it returns when the copy is complete.
func (d *Device) CopyToDevice(dst driver.DevicePtr, src []float64) error {
	n := len(src)
	if n == 0 {
		return nil
	}
	if n*8 <= transferDirect {
		if err := driver.MemcpyHtoDAsync(dst, unsafe.Pointer(&src[0]), uint64(n)*8, d.stream); err != nil {
			return err
		}
		return d.stream.Synchronize()
	}
	st, err := d.stagingPair()
	if err != nil {
		return err
	}
	piece := transferPiece / 8
	for off, b := 0, 0; off < n; off, b = off+piece, 1-b {
		m := min(piece, n-off)
		// Filling buffer b overlaps the previous piece's DMA; waiting for that DMA before
		// queueing this one keeps the buffer filled next round free.
		parallelCopy(st[b][:m], src[off:off+m])
		if err := d.stream.Synchronize(); err != nil {
			return err
		}
		if err := driver.MemcpyHtoDAsync(dst+driver.DevicePtr(off*8), unsafe.Pointer(&st[b][0]), uint64(m)*8, d.stream); err != nil {
			return err
		}
	}
	return d.stream.Synchronize()
}

// CopyFromPeer copies n bytes at src, which GPU from holds, into a new buffer of d's pool and
// returns it, the copy complete: peer to peer where the GPUs reach each other (NVLink, PCIe),
// never through the caller's host memory. Free the buffer with d.Pool().FreeLater. src must not
// be written while it copies (persisted chunks are not).
func (d *Device) CopyFromPeer(ctx context.Context, from *Device, src driver.DevicePtr, n uint64) (driver.DevicePtr, error) {
	var dst driver.DevicePtr
	err := d.Do(ctx, func() error {
		p, err := d.pool.Alloc(max(n, 8))
		if err != nil {
			return err
		}
		if err := driver.MemcpyPeerAsync(p, d.ctx, src, from.ctx, n, d.stream); err != nil {
			d.pool.Free(p)
			return err
		}
		if err := d.stream.Synchronize(); err != nil {
			d.pool.Free(p)
			return err
		}
		dst = p
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("copy %d bytes from GPU %d to GPU %d: %w", n, from.Info.Index, d.Info.Index, err)
	}
	return dst, nil
}

// CopyToHostPieces copies n doubles from the device at src to the host through pinned
// staging, after the work queued on Stream, handing each piece to sink as it arrives: off is
// the piece's first element, piece its values, valid only until sink returns. The next piece
// moves while sink runs. Call it on the device goroutine (inside Do); sink may use goroutines
// but must be done with piece when it returns. It lets a caller put values where they belong
// (a chunk's rows inside a whole array) without a copy of the chunk first.
func (d *Device) CopyToHostPieces(src driver.DevicePtr, n int, sink func(off int, piece []float64)) error {
	if n <= 0 {
		return nil
	}
	if err := d.stream.Synchronize(); err != nil {
		return err
	}
	st, err := d.stagingPair()
	if err != nil {
		return err
	}
	piece := transferPiece / 8
	prev, prevBuf := -1, 0
	for off, b := 0, 0; off < n; off, b = off+piece, 1-b {
		m := min(piece, n-off)
		if err := driver.MemcpyDtoHAsync(unsafe.Pointer(&st[b][0]), src+driver.DevicePtr(off*8), uint64(m)*8, d.stream); err != nil {
			return err
		}
		if prev >= 0 {
			sink(prev, st[prevBuf][:min(piece, n-prev)])
		}
		if err := d.stream.Synchronize(); err != nil {
			return err
		}
		prev, prevBuf = off, b
	}
	sink(prev, st[prevBuf][:n-prev])
	return nil
}
