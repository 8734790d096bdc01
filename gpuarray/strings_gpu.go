package gpuarray

import (
	"context"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Strings on a GPU (issue 31): package dataframe's string heaps held in device memory in
// Arrow's large_string layout, and the string kernels (cuda.StrMatch, StrEqCols, StrEncode)
// over them. Their results are arrays held on the GPU, which fused expressions, reductions,
// Take and GroupAggregate read in place.

// DeviceStrings is plumbing for package dataframe: a column of strings held on one GPU in
// Arrow's large_string layout (n+1 int64 offsets and the bytes). Its allocations go back to
// the device's pool when it becomes unreachable.
type DeviceStrings struct {
	dev *cuda.Device
	col cuda.StrColumn
	ctx context.Context
}

// PersistStrings is plumbing for package dataframe: it copies strings in Arrow's layout
// (offsets: n+1 int64s from 0 to len(data); string i is data[offsets[i]:offsets[i+1]]) to
// the GPU that opts name (OnGPU; the first of OnGPUs) and keeps them there.
func PersistStrings(offsets []int64, data []byte, opts ...ComputeOption) (*DeviceStrings, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, fmt.Errorf("PersistStrings: %w", err)
	}
	g, ok := cfg.sched.(*gpuSched)
	if !ok || len(g.devs) == 0 {
		return nil, fmt.Errorf("PersistStrings: needs a GPU scheduler (OnGPU)")
	}
	d := g.devs[0]
	t0 := time.Now()
	c, err := d.UploadStrings(cfg.ctx, offsets, data)
	if err != nil {
		return nil, fmt.Errorf("PersistStrings: %w", err)
	}
	s := &DeviceStrings{dev: d, col: c, ctx: context.Background()}
	runtime.AddCleanup(s, func(c cuda.StrColumn) { d.FreeStrings(c) }, c)
	cuda.Trace("strings: %d (%d bytes) copied to GPU %d in %.4f s", c.N, c.Bytes, d.Info.Index, time.Since(t0).Seconds())
	return s, nil
}

// Len is the number of strings.
func (s *DeviceStrings) Len() int { return int(s.col.N) }

// Where says which GPU holds the strings ("gpu 0").
func (s *DeviceStrings) Where() string { return fmt.Sprintf("gpu %d", s.dev.Info.Index) }

// On reports whether the strings are held on the GPU that opts name (the first of OnGPUs).
func (s *DeviceStrings) On(opts ...ComputeOption) bool {
	cfg, err := configure(opts)
	if err != nil {
		return false
	}
	g, ok := cfg.sched.(*gpuSched)
	return ok && len(g.devs) > 0 && g.devs[0] == s.dev
}

// Strings copies the strings back to the host in Arrow's layout.
func (s *DeviceStrings) Strings() (offsets []int64, data []byte, err error) {
	offsets, data, err = s.dev.DownloadStrings(s.ctx, s.col)
	runtime.KeepAlive(s)
	return offsets, data, err
}

// heldOne returns an array of one chunk of n elements of dt held at p on dev (narrow: one
// byte per bool), which it owns; n == 0 gives an empty host array (p freed).
func heldOne(dev *cuda.Device, p driver.DevicePtr, n int, dt dtype.DType, narrow bool, path string) (*Array, error) {
	if n == 0 {
		freeOn(dev, []driver.DevicePtr{p})
		r, err := expr.NewData(dtype.Make(dt, 0), []int{0}, [][]int{{0}})
		if err != nil {
			return nil, err
		}
		return &Array{n: r, path: path}, nil
	}
	return heldChunks(dev, []driver.DevicePtr{p}, []int{n}, dt, narrow, path)
}

// heldChunks returns a 1-d array of dt whose chunks (lengths ns) are held at ps on dev.
func heldChunks(dev *cuda.Device, ps []driver.DevicePtr, ns []int, dt dtype.DType, narrow bool, path string) (*Array, error) {
	total := 0
	for _, n := range ns {
		total += n
	}
	shape, chunks := []int{total}, [][]int{slices.Clone(ns)}
	gc := &gpuChunks{grid: newChunkGrid(shape, chunks), dt: dt, narrow: narrow, label: "on"}
	gc.idle.L = &gc.mu
	at := 0
	for i, p := range ps {
		gc.ptrs, gc.devs, gc.offs = append(gc.ptrs, p), append(gc.devs, dev), append(gc.offs, []int{at})
		at += ns[i]
	}
	gc.allocs = []devAllocs{{dev: dev, ptrs: slices.Clone(ps)}}
	gc.addCleanup()
	r, err := expr.NewBuffered(gc, shape, chunks)
	if err != nil {
		gc.freeNow()
		return nil, err
	}
	r.DType = dt
	return &Array{n: r, path: path}, nil
}

// strOps are the kernels of Match by name.
var strOps = map[string]ptx.StrOp{"len": ptx.StrLen, "eq": ptx.StrEq, "startswith": ptx.StrStartsWith, "endswith": ptx.StrEndsWith, "contains": ptx.StrContains}

// Match runs a string kernel over every string on the GPU that holds them: "len" (int64
// code points), "eq" (== lit), "startswith", "endswith", "contains" (bools). The result is
// an array of Len() elements held on that GPU.
func (s *DeviceStrings) Match(op, lit string) (*Array, error) {
	o, ok := strOps[op]
	if !ok {
		return nil, fmt.Errorf("DeviceStrings.Match: no string kernel %q", op)
	}
	t0 := time.Now()
	p, err := s.dev.StrMatch(s.ctx, o, s.col, lit)
	runtime.KeepAlive(s)
	if err != nil {
		return nil, fmt.Errorf("DeviceStrings.Match: %w", err)
	}
	dt, narrow := dtype.Bool, true
	if o == ptx.StrLen {
		dt, narrow = dtype.Int64, false
	}
	path := fmt.Sprintf("str.%s: string kernel over %d strings on gpu %d", op, s.col.N, s.dev.Info.Index)
	cuda.Trace("%s in %.4f s", path, time.Since(t0).Seconds())
	return heldOne(s.dev, p, int(s.col.N), dt, narrow, path)
}

// heldInt64 returns a's chunks as int64 words on dev: a computed there with opts and kept
// (Persist), pinned until the returned func runs; ok is false when they are not all there.
func heldInt64(a *Array, dev *cuda.Device, opts []ComputeOption) (g *gpuChunks, done func(), ok bool) {
	h := a.AsType(Int64).Persist(opts...)
	if h.Err() != nil {
		return nil, nil, false
	}
	g, ok = h.n.Buf.(*gpuChunks)
	if !ok || g.narrow || g.dt != dtype.Int64 || len(g.grid.shape) != 1 || !g.pin() {
		return nil, nil, false
	}
	for i := range g.ptrs {
		if g.devs[i] != dev || (g.ptr(i) == 0 && g.grid.chunks[0][i] > 0) {
			g.unpin()
			return nil, nil, false
		}
	}
	return g, func() { g.unpin(); runtime.KeepAlive(h) }, true
}

// EqualAt compares row i's strings of two columns on the GPU: string ia[i] of s with string
// ib[i] of o (ia and ib: integer positions of one length and chunking, computed with opts on
// the GPU that holds s and o). The result is a bool array held there, chunked as ia.
func (s *DeviceStrings) EqualAt(ia *Array, o *DeviceStrings, ib *Array, opts ...ComputeOption) (*Array, error) {
	if o.dev != s.dev {
		return nil, fmt.Errorf("DeviceStrings.EqualAt: strings on gpu %d and gpu %d", s.dev.Info.Index, o.dev.Info.Index)
	}
	ga, da, ok := heldInt64(ia, s.dev, opts)
	if !ok {
		return nil, fmt.Errorf("DeviceStrings.EqualAt: the positions are not held on %s", s.Where())
	}
	defer da()
	gb, db, ok := heldInt64(ib, s.dev, opts)
	if !ok {
		return nil, fmt.Errorf("DeviceStrings.EqualAt: the positions are not held on %s", s.Where())
	}
	defer db()
	if !slices.Equal(ga.grid.chunks[0], gb.grid.chunks[0]) {
		return nil, fmt.Errorf("DeviceStrings.EqualAt: positions chunked %v and %v", ga.grid.chunks[0], gb.grid.chunks[0])
	}
	var ps []driver.DevicePtr
	var ns []int
	for i, n := range ga.grid.chunks[0] {
		p, err := s.dev.StrEqCols(s.ctx, s.col, ga.ptr(i), o.col, gb.ptr(i), int64(n))
		if err != nil {
			freeOn(s.dev, ps)
			return nil, fmt.Errorf("DeviceStrings.EqualAt: %w", err)
		}
		ps, ns = append(ps, p), append(ns, n)
	}
	runtime.KeepAlive(s)
	runtime.KeepAlive(o)
	if sum(ns) == 0 {
		freeOn(s.dev, ps)
		r, err := expr.NewData(dtype.Make(dtype.Bool, 0), []int{0}, [][]int{{0}})
		return &Array{n: r}, err
	}
	return heldChunks(s.dev, ps, ns, dtype.Bool, true, fmt.Sprintf("string equality of %d rows on gpu %d", sum(ns), s.dev.Info.Index))
}

// Encode dictionary-encodes the strings on their GPU: a hash table built there
// (cuda.StrEncode), its taken slots ranked by a device scan. It returns each string's code, an
// int64 array of Len() elements held on the GPU (equal strings, equal codes, in [0,
// len(first))), and for each code the index of a string of it (the table's taken slots, the
// only values that come to the host).
func (s *DeviceStrings) Encode(opts ...ComputeOption) (codes *Array, first []int64, note string, err error) {
	t0 := time.Now()
	table, slot, tsize, err := s.dev.StrEncode(s.ctx, s.col)
	runtime.KeepAlive(s)
	if err != nil {
		return nil, nil, "", fmt.Errorf("DeviceStrings.Encode: %w", err)
	}
	tab, err := heldOne(s.dev, table, int(tsize), dtype.Int64, false, "")
	if err != nil {
		freeOn(s.dev, []driver.DevicePtr{slot})
		return nil, nil, "", fmt.Errorf("DeviceStrings.Encode: %w", err)
	}
	slots, err := heldOne(s.dev, slot, int(s.col.N), dtype.Int64, false, "")
	if err != nil {
		return nil, nil, "", fmt.Errorf("DeviceStrings.Encode: %w", err)
	}
	taken := tab.Ne(int64(0))
	rank := taken.AsType(Int64).Cumsum().Sub(int64(1))
	codes = Take(rank, slots, 0).Persist(opts...)
	if err := codes.Err(); err != nil {
		return nil, nil, "", fmt.Errorf("DeviceStrings.Encode: codes: %w", err)
	}
	f, err := tab.Mask(taken).Sub(int64(1)).Compute(opts...)
	if err != nil {
		return nil, nil, "", fmt.Errorf("DeviceStrings.Encode: the table's strings: %w", err)
	}
	first, err = f.ToSliceInt64()
	if err != nil {
		return nil, nil, "", fmt.Errorf("DeviceStrings.Encode: %w", err)
	}
	note = fmt.Sprintf("strings dictionary-encoded on gpu %d (a hash table of %d slots, %d distinct of %d strings, ranked by a device scan) in %.3g s",
		s.dev.Info.Index, tsize, len(first), s.col.N, time.Since(t0).Seconds())
	if p := f.Path(); p != "" {
		note += "; " + p
	}
	return codes, first, note, nil
}
