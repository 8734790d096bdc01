package cluster

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// chunkSink is where a shuffle's unpack joins an output partition: its kept form in host
// memory (memChunk) or a file of the store's spill directory (fileChunk).
type chunkSink interface {
	// write puts p's values at row at.
	write(at int, p dtype.Slice) error
	// done ends the partition of n rows and returns the task's value: a *blob or a
	// *spilledChunk, which the worker stores as they are.
	done(n int) (any, error)
	// abort gives up the partition.
	abort()
}

// memChunk is an output partition made in its encChunk blob.
type memChunk struct {
	b    *blob
	vals dtype.Slice
}

func newMemChunk(dt dtype.DType, n int) (*memChunk, error) {
	b, vals, err := newChunkBlob(dt, n)
	if err != nil {
		return nil, err
	}
	return &memChunk{b: b, vals: vals}, nil
}

func (m *memChunk) write(at int, p dtype.Slice) error {
	dtype.Copy(m.vals.Slice(at, at+p.Len()), p)
	return nil
}

func (m *memChunk) done(int) (any, error) { return m.b, nil }

func (m *memChunk) abort() {}

// spilledChunk is a task's kept chunk written to a file of the store's spill directory in the
// layout the store spills results in (the encoding byte, then the blob's data).
type spilledChunk struct {
	path string
	size uint64 // the blob's data bytes
}

// fileChunk is an output partition written to its spill file as it is joined.
type fileChunk struct {
	f    *os.File
	w    *bufio.Writer
	path string
	size uint64
}

// createChunkFile starts the spill file of k's result, a 1-D chunk of n values of dt.
func (st *store) createChunkFile(k string, dt dtype.DType, n int) (*fileChunk, error) {
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		return nil, fmt.Errorf("spill to disk: %w", err)
	}
	path := filepath.Join(st.dir, sanitize(k)+".bin")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spill to disk: %w", err)
	}
	fc := &fileChunk{f: f, w: bufio.NewWriterSize(f, 1<<20), path: path}
	h := chunkHeader(&plan.Output{Shape: []int{n}, Data: dtype.Make(dt, 0)})
	fc.size = uint64(len(h) + n*dt.Size())
	if err := fc.w.WriteByte(encChunk); err != nil {
		fc.abort()
		return nil, fmt.Errorf("spill to disk: %w", err)
	}
	if _, err := fc.w.Write(h); err != nil {
		fc.abort()
		return nil, fmt.Errorf("spill to disk: %w", err)
	}
	return fc, nil
}

func (fc *fileChunk) write(_ int, p dtype.Slice) error {
	if _, err := fc.w.Write(p.Bytes()); err != nil {
		return fmt.Errorf("write %s: %w", fc.path, err)
	}
	return nil
}

func (fc *fileChunk) done(int) (any, error) {
	if err := fc.w.Flush(); err != nil {
		return nil, fmt.Errorf("write %s: %w", fc.path, err)
	}
	if err := fc.f.Close(); err != nil {
		return nil, fmt.Errorf("write %s: %w", fc.path, err)
	}
	fc.f = nil
	return &spilledChunk{path: fc.path, size: fc.size}, nil
}

func (fc *fileChunk) abort() {
	if fc.f != nil {
		_ = fc.f.Close()
		fc.f = nil
		_ = os.Remove(fc.path)
	}
}

// overRoom reports whether a result of n bytes would not fit in the host memory the store
// keeps results in, beside the buffers in flight.
func (st *store) overRoom(n uint64) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.hostLimit > 0 && n+st.held > st.hostLimit
}

// putSpilled keeps k's result, already written to its spill file.
func (st *store) putSpilled(k string, c *spilledChunk) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if old := st.items[k]; old != nil && old.path == c.path {
		// Dropping the old result would remove the new file: forget it without.
		delete(st.items, k)
		st.leaveTier(old)
	}
	st.dropLocked(k)
	st.items[k] = &stored{path: c.path, size: c.size, touched: st.tick()}
	st.spilled += c.size
	st.moved[k] = tierDisk
}
