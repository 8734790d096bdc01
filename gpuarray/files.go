package gpuarray

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/io/elem"
	"github.com/gpunotes/gpunotes/gpuarray/io/npy"
	"github.com/gpunotes/gpunotes/gpuarray/io/source"
	"github.com/gpunotes/gpunotes/gpuarray/io/zarr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/internal/atomicfile"
)

// Arrays read from files are lazy: each chunk's task reads only that chunk's bytes, when it
// runs, on the machine that runs it. A cluster worker therefore reads the file itself: the
// path must name the same file there (a shared filesystem); where it does not, the task fails
// with the worker's "no such file" error naming the file and the chunk.
//
// An array read from a file has the file's dtype (bool, integers, floats, complex numbers),
// in either byte order; float16 files are refused with an error.

// fileDType is the array dtype of stored elements of type t.
func fileDType(what string, t elem.Type) (expr.DType, error) {
	dt, err := source.DType(t)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	return dt, nil
}

// fileArray makes the lazy array over f, chunked as opts say or by def.
func fileArray(what string, f *expr.File, def [][]int, opts []ArrayOption) *Array {
	t, err := elem.Parse(f.Type)
	if err != nil {
		return errArray(fmt.Errorf("%s: %w", what, err))
	}
	dt, err := fileDType(what, t)
	if err != nil {
		return errArray(err)
	}
	s := spec{}
	for _, o := range opts {
		if o != nil {
			o(&s)
		}
	}
	if s.hasShape && !slices.Equal(s.shape, f.Shape) {
		return errArray(fmt.Errorf("%s: Shape%v given, the file holds shape %s", what, s.shape, expr.ShapeString(f.Shape)))
	}
	chunks := def
	if s.hasChunks || s.hasPerAxis || chunks == nil {
		_, chunks, _, err = resolve(what, f.Shape, opts)
		if err != nil {
			return errArray(err)
		}
	}
	if abs, err := filepath.Abs(f.Path); err == nil {
		f.Path = abs
	}
	return wrap(expr.NewFile(f, dt, chunks))
}

// LoadNPY returns a lazy array over a .npy file: each chunk reads only its own bytes when
// it is computed. Chunks (or ChunkSizes) set the chunks; by default chunks of up to 128 MiB
// of float64. Both byte orders and C and Fortran order are read.
func LoadNPY(path string, opts ...ArrayOption) *Array {
	fh, err := os.Open(path)
	if err != nil {
		return errArray(fmt.Errorf("LoadNpy: %w", err))
	}
	defer fh.Close()
	h, off, err := npy.ReadHeader(fh)
	if err != nil {
		return errArray(fmt.Errorf("LoadNpy %s: %w", path, err))
	}
	st, err := fh.Stat()
	if err != nil {
		return errArray(fmt.Errorf("LoadNpy %s: %w", path, err))
	}
	if need := off + h.DataBytes(); st.Size() < need {
		return errArray(fmt.Errorf("LoadNpy %s: truncated file: %d bytes, the header (%s %s) needs %d", path, st.Size(), h.Type, expr.ShapeString(h.Shape), need))
	}
	f := &expr.File{Format: "npy", Path: path, Offset: off, Type: h.Type.String(), Fortran: h.Fortran, Shape: h.Shape}
	return fileArray("LoadNpy "+path, f, nil, opts)
}

// NPZNames lists the arrays of a .npz file.
func NPZNames(path string) ([]string, error) {
	ms, closer, err := npzMembers(path)
	if err != nil {
		return nil, err
	}
	closer()
	names := make([]string, len(ms))
	for i, m := range ms {
		names[i] = m.Name
	}
	return names, nil
}

// npzMembers lists the members of a .npz file, which stays open until close is called.
func npzMembers(path string) (ms []*npy.Member, close func(), err error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, fmt.Errorf("npz: %w", err)
	}
	st, err := fh.Stat()
	if err == nil {
		ms, err = npy.Members(fh, st.Size())
	}
	if err != nil {
		fh.Close()
		return nil, nil, fmt.Errorf("%s: %w", path, err)
	}
	return ms, func() { fh.Close() }, nil
}

// LoadNPZ returns the array name of a .npz file. Arrays stored uncompressed (np.savez) are
// read lazily in place, like LoadNpy; compressed ones (np.savez_compressed) are decompressed
// into memory at once.
func LoadNPZ(path, name string, opts ...ArrayOption) *Array {
	what := fmt.Sprintf("LoadNpz %s[%s]", path, name)
	ms, closer, err := npzMembers(path)
	if err != nil {
		return errArray(fmt.Errorf("LoadNpz: %w", err))
	}
	defer closer()
	var m *npy.Member
	var names []string
	for _, x := range ms {
		names = append(names, x.Name)
		if x.Name == name {
			m = x
		}
	}
	if m == nil {
		return errArray(fmt.Errorf("%s: no such array (the file holds %v)", what, names))
	}
	f := &expr.File{Format: "npy", Path: path, Offset: m.Offset, Type: m.Header.Type.String(), Fortran: m.Header.Fortran, Shape: m.Header.Shape}
	if m.Offset >= 0 {
		return fileArray(what, f, nil, opts)
	}
	// Compressed: decompress into a temporary .npy-like buffer and read it from memory.
	rc, err := m.Open()
	if err != nil {
		return errArray(fmt.Errorf("%s: %w", what, err))
	}
	defer rc.Close()
	t := m.Header.Type
	dt, err := fileDType(what, t)
	if err != nil {
		return errArray(err)
	}
	// The header and the archive's directory both come from the file: before allocating,
	// the data must be what the member holds, and what its compressed bytes can give.
	if need := m.Header.DataBytes(); need > m.DataBytes() || need > m.MaxDataBytes() {
		return errArray(fmt.Errorf("%s: the header (%s %s) needs %d data bytes, the member holds %d (%d compressed): the file is corrupt",
			what, m.Header.Type, expr.ShapeString(m.Header.Shape), need, m.DataBytes(), m.CompressedBytes()))
	}
	raw := make([]byte, m.Header.DataBytes())
	if _, err := readFull(rc, raw); err != nil {
		return errArray(fmt.Errorf("%s: %w", what, err))
	}
	t.ToNative(raw)
	if m.Header.Fortran {
		raw = fortranToC(raw, m.Header.Shape, t.Size)
	}
	vals, err := dtype.FromBytes(dt, raw)
	if err != nil {
		return errArray(fmt.Errorf("%s: %w", what, err))
	}
	shape, chunks, _, err := resolve(what, m.Header.Shape, opts)
	if err != nil {
		return errArray(err)
	}
	return wrap(expr.NewData(vals, shape, chunks))
}

func readFull(r interface{ Read([]byte) (int, error) }, b []byte) (int, error) {
	n := 0
	for n < len(b) {
		k, err := r.Read(b[n:])
		n += k
		if err != nil {
			if n == len(b) {
				break
			}
			return n, fmt.Errorf("truncated member: %d of %d data bytes: %w", n, len(b), err)
		}
	}
	return n, nil
}

// fortranToC reorders column-major elements of sz bytes into row-major.
func fortranToC(v []byte, shape []int, sz int) []byte {
	out := make([]byte, len(v))
	r := len(shape)
	idx := make([]int, r)
	for c := 0; c < len(out)/sz; c++ {
		// idx is the row-major index of c; its column-major position:
		f, s := 0, 1
		for d := 0; d < r; d++ {
			f += idx[d] * s
			s *= shape[d]
		}
		copy(out[c*sz:(c+1)*sz], v[f*sz:(f+1)*sz])
		for d := r - 1; d >= 0; d-- {
			idx[d]++
			if idx[d] < shape[d] {
				break
			}
			idx[d] = 0
		}
	}
	return out
}

// FromFile returns a lazy array over raw binary elements: dtype is a NumPy type string
// ("<f8", ">i4", "|u1") or name ("float64": this machine's byte order), shape the array's
// shape, row-major, starting offset bytes into the file.
func FromFile(path, dtype string, shape []int, offset int64, opts ...ArrayOption) *Array {
	what := "FromFile " + path
	t, err := elem.Parse(dtype)
	if err != nil {
		var err2 error
		if t, err2 = elem.FromName(dtype); err2 != nil {
			return errArray(fmt.Errorf("%s: %w", what, err))
		}
		t = t.NativeType()
	}
	for _, d := range shape {
		if d < 0 {
			return errArray(fmt.Errorf("%s: negative length in shape %v", what, shape))
		}
	}
	if offset < 0 {
		return errArray(fmt.Errorf("%s: negative offset %d", what, offset))
	}
	st, err := os.Stat(path)
	if err != nil {
		return errArray(fmt.Errorf("FromFile: %w", err))
	}
	need := offset + expr.Size(shape)*int64(t.Size)
	if st.Size() < need {
		return errArray(fmt.Errorf("%s: %d bytes, shape %s of %s from offset %d needs %d", what, st.Size(), expr.ShapeString(shape), t, offset, need))
	}
	f := &expr.File{Format: "raw", Path: path, Offset: offset, Type: t.String(), Shape: slices.Clone(shape)}
	return fileArray(what, f, nil, opts)
}

// OpenZarr returns a lazy array over the Zarr array in directory path (format v2 or v3),
// chunked as the store is, or as Chunks (ChunkSizes) say: a task then reads the store
// chunks its own chunk touches.
func OpenZarr(path string, opts ...ArrayOption) *Array {
	za, err := zarr.Open(path)
	if err != nil {
		return errArray(fmt.Errorf("OpenZarr: %w", err))
	}
	f := &expr.File{Format: "zarr", Path: path, Type: za.Type.String(), Shape: za.Shape, Meta: string(za.Raw)}
	def, err := expr.RegularChunks(za.Shape, za.Chunks)
	if err != nil {
		return errArray(fmt.Errorf("OpenZarr %s: %w", path, err))
	}
	return fileArray("OpenZarr "+path, f, def, opts)
}

// ZarrAttrs returns the attributes of the Zarr array or group in directory path.
func ZarrAttrs(path string) (map[string]any, error) { return zarr.Attrs(path) }

// ZarrList lists the arrays and groups (with a trailing "/") in the Zarr group at path.
func ZarrList(path string) ([]string, error) {
	k, err := zarr.Kind(path)
	if err != nil {
		return nil, err
	}
	if k != "group" {
		return nil, fmt.Errorf("ZarrList %s: not a Zarr group", path)
	}
	return zarr.List(path)
}

// streamChunks computes a chunk by chunk and gives each chunk (its offset, shape and values,
// row-major) to sink, from up to GOMAXPROCS goroutines at once. It holds one batch of
// chunks at a time, never the whole array. Stages the array needs first (reductions) are
// computed as Compute does.
func streamChunks(a *Array, title string, opts []ComputeOption, sink func(off, shape []int, vals dtype.Slice) error) error {
	if err := a.Err(); err != nil {
		return err
	}
	cfg, err := configure(opts)
	if err != nil {
		return err
	}
	root := a.n
	if root.Kind == expr.KReduce {
		c, err := computeHost(cfg, []*Array{a})
		if err != nil {
			return err
		}
		root = c[0].n
	}
	defer pinGraph(root)()
	order := plan.Order(root)
	if root.Kind != expr.KData {
		order = order[:len(order)-1]
	}
	total := expr.NumChunks(root.Chunks)
	for _, n := range order {
		total += expr.NumChunks(n.Args[0].Chunks)
	}
	prog := engine.NewProgressTitled(title, total, cfg.progress, cfg.quiet)
	defer prog.Finish()
	popt := planOptions(cfg.sched, cfg.memLimit)
	done := map[*expr.Node]dtype.Slice{}
	for id, n := range order {
		st, err := plan.Lower(id, n, done, popt)
		if err != nil {
			return err
		}
		outs, err := cfg.sched.Run(cfg.ctx, st.Tasks, prog.Add)
		if err != nil {
			return err
		}
		if done[n], err = st.Assemble(outs); err != nil {
			return err
		}
	}
	st, err := plan.Lower(len(order), root, done, popt)
	if err != nil {
		return err
	}
	par := runtime.GOMAXPROCS(0)
	const batchBytes = 1 << 30
	for lo := 0; lo < len(st.Tasks); {
		hi, bytes := lo, int64(0)
		for hi < len(st.Tasks) && (hi == lo || (hi-lo < 4*par && bytes+st.Tasks[hi].Bytes() <= batchBytes)) {
			bytes += st.Tasks[hi].Bytes()
			hi++
		}
		batch := st.Tasks[lo:hi]
		outs, err := cfg.sched.Run(cfg.ctx, batch, func(int) {})
		if err != nil {
			return err
		}
		if err := sinkAll(cfg.ctx, batch, outs, par, sink); err != nil {
			return err
		}
		prog.Add(len(batch))
		lo = hi
	}
	prog.OK = true
	return nil
}

// sinkAll hands outs to sink from up to par goroutines; the first error wins.
func sinkAll(ctx context.Context, tasks []*plan.Task, outs []*plan.Output, par int, sink func(off, shape []int, vals dtype.Slice) error) error {
	next := make(chan int)
	var wg sync.WaitGroup
	var once sync.Once
	var first error
	for w := 0; w < min(par, len(tasks)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := sink(tasks[i].Offset, tasks[i].Shape, outs[i].Data); err != nil {
					once.Do(func() { first = err })
				}
			}
		}()
	}
	for i := range tasks {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// fileType is the stored type of an array's elements: its dtype, little endian.
func fileType(a *Array) elem.Type { return elem.MustParse(a.n.DType.TypeStr()) }

// storedBytes returns the bytes of vals as elements of dt in this machine's byte order.
func storedBytes(dt dtype.DType, vals dtype.Slice) []byte {
	if vals.DType() != dt {
		vals = dtype.Convert(vals, dt)
	}
	return vals.Bytes()
}

// SaveNPY computes x chunk by chunk and writes it to a .npy file at path (x's dtype, this
// machine's byte order, C order), never holding the whole array in memory. The file appears
// complete or not at all: it is written under a temporary name and renamed at the end.
func SaveNPY(path string, x *Array, opts ...ComputeOption) error {
	if err := x.Err(); err != nil {
		return fmt.Errorf("SaveNpy %s: %w", path, err)
	}
	t := fileType(x).NativeType()
	dt := x.n.DType
	shape := x.n.Shape
	hdr := npy.AppendHeader(nil, npy.Header{Type: t, Shape: shape})
	return writeAtomic(path, func(fh *os.File) error {
		if _, err := fh.Write(hdr); err != nil {
			return err
		}
		if err := fh.Truncate(int64(len(hdr)) + expr.Size(shape)*int64(t.Size)); err != nil {
			return err
		}
		return streamChunks(x, "save "+filepath.Base(path)+" (chunks)", opts, func(off, shp []int, vals dtype.Slice) error {
			return writeBoxC(fh, int64(len(hdr)), shape, off, shp, storedBytes(dt, vals), t.Size)
		})
	})
}

// writeAtomic writes a file through write into a temporary file next to path, then renames
// it to path (internal/atomicfile); on any error the temporary file is removed and path is
// left as it was. Temporary files that killed writers left are removed first.
func writeAtomic(path string, write func(*os.File) error) (err error) {
	fh, err := atomicfile.Create(path)
	if err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	defer fh.Abort()
	if err = write(fh.File); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	if err = fh.Commit(); err != nil {
		return fmt.Errorf("save %s: %w", path, err)
	}
	return nil
}

// writeBoxC writes the box at off with shape (C-order bytes b) into a C-order file of shape
// full whose elements start at base: one positioned write per contiguous run.
func writeBoxC(fh *os.File, base int64, full, off, shape []int, b []byte, sz int) error {
	return elem.BoxRuns(full, off, shape, func(o, lin, n int64) error {
		_, err := fh.WriteAt(b[o*int64(sz):(o+n)*int64(sz)], base+lin*int64(sz))
		return err
	})
}

// ZarrOption configures ToZarr.
type ZarrOption func(*zarrConfig)

type zarrConfig struct {
	format    int
	comp      string
	chunks    []int
	attrs     map[string]any
	overwrite bool
	compute   []ComputeOption
}

// ZarrFormat picks the Zarr format, 2 or 3 (default 3).
func ZarrFormat(v int) ZarrOption { return func(c *zarrConfig) { c.format = v } }

// ZarrCompressor picks the chunks' compressor: "zstd" (default for v3), "blosc" (lz4 inside,
// byte shuffle: default for v2, as zarr-python 2 wrote), "blosc-zstd", "gzip", "zlib" (v2
// only) or "none".
func ZarrCompressor(name string) ZarrOption { return func(c *zarrConfig) { c.comp = name } }

// ZarrChunks sets the store's chunk shape (default: the array's chunks).
func ZarrChunks(sizes ...int) ZarrOption {
	return func(c *zarrConfig) { c.chunks = slices.Clone(sizes) }
}

// ZarrAttributes sets the array's attributes.
func ZarrAttributes(attrs map[string]any) ZarrOption {
	return func(c *zarrConfig) { c.attrs = attrs }
}

// ZarrOverwrite replaces a store already at the path (default: an error).
func ZarrOverwrite() ZarrOption { return func(c *zarrConfig) { c.overwrite = true } }

// ZarrCompute passes options to the computation of the array (a scheduler, a context).
func ZarrCompute(opts ...ComputeOption) ZarrOption {
	return func(c *zarrConfig) { c.compute = append(c.compute, opts...) }
}

// ToZarr computes the array chunk by chunk and writes it as a Zarr array in directory path,
// encoding chunks in parallel. The store is built under a temporary name and renamed to path
// at the end, its metadata written last: a failed write leaves no store at path.
func (a *Array) ToZarr(path string, opts ...ZarrOption) error {
	if err := a.Err(); err != nil {
		return fmt.Errorf("ToZarr %s: %w", path, err)
	}
	cfg := zarrConfig{format: 3}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	if cfg.comp == "" {
		cfg.comp = "zstd"
		if cfg.format == 2 {
			cfg.comp = "blosc"
		}
	}
	shape := a.n.Shape
	if cfg.chunks == nil {
		for _, cs := range a.n.Chunks {
			cfg.chunks = append(cfg.chunks, max(cs[0], 1))
		}
	}
	t := fileType(a)
	dt := a.n.DType
	za, err := zarr.New(cfg.format, shape, cfg.chunks, t, cfg.comp)
	if err != nil {
		return fmt.Errorf("ToZarr %s: %w", path, err)
	}
	if cfg.attrs != nil {
		za.Attrs = cfg.attrs
	}
	if _, err := os.Stat(path); err == nil && !cfg.overwrite {
		return fmt.Errorf("ToZarr %s: already exists (ZarrOverwrite() replaces it)", path)
	}
	x := a.Rechunk(cfg.chunks...)
	if err := x.Err(); err != nil {
		return fmt.Errorf("ToZarr %s: %w", path, err)
	}
	base := filepath.Base(filepath.Clean(path))
	tmpd, err := atomicfile.MkdirTemp(path)
	if err != nil {
		return fmt.Errorf("ToZarr %s: %w", path, err)
	}
	defer tmpd.Abort()
	tmp := tmpd.Name
	fail := func(err error) error { return fmt.Errorf("ToZarr %s: %w", path, err) }
	err = streamChunks(x, "save "+base+" (chunks)", cfg.compute, func(off, shp []int, vals dtype.Slice) error {
		idx := make([]int, len(off))
		for d := range off {
			idx[d] = off[d] / cfg.chunks[d]
		}
		return za.WriteBox(tmp, idx, storedBytes(dt, vals))
	})
	if err != nil {
		return fail(err)
	}
	if err := za.WriteMeta(tmp); err != nil {
		return fail(err)
	}
	// Swapped in one step where the system can (atomicfile.Dir.Commit): renaming the old store
	// away and the new one in left a moment with no store at path, and a process killed there
	// left the good store under a temporary name.
	if err := tmpd.Commit(); err != nil {
		return fail(err)
	}
	return nil
}
