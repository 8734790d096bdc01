package cuda

import (
	"context"
	"fmt"
	"math"
	"time"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
)

// The hash join on keys held on the device (JoinHeld): HashJoin's table and probe kernels
// (ptx/hashjoin.go) over key codes encoded on the device from the sides' held columns, the
// probe rows put in the order of their hash partitions there when the output follows them,
// and the pairs written as int32 rows into allocations the caller owns, a piece per output
// partition, for GatherRows. Only counts come to the host: the longest key run of the build
// side, the probe rows of each partition and the output rows of each piece.

// HeldKey is one key column of a side held on the device: Pieces in order (each its own
// allocation, Rows elements each) of Unit bytes per element (4: int32, read sign-extended; 8:
// a word, an int64 or an integer held as one), and, when Table is not nil, a table the
// column's values are looked up in (a categorical's codes in a dictionary of both sides).
type HeldKey struct {
	Pieces []driver.DevicePtr
	Rows   []int64
	Unit   int
	Table  []int64
}

// HeldJoinSpec is what JoinHeld joins: Build's rows looked up by Probe's (key columns of one
// count, each side's of one length), with Mode. Parts > 0 orders the output by the probe rows'
// hash partitions in [0, Parts) (the partition ptx.JoinPart gives the codes, as
// dataframe/hashjoin.Partition), then by probe row, a piece per partition; otherwise the
// output is in probe row order, a piece per entry of Split (probe rows, summing to the probe
// side's). BuildRows asks for the build rows of JoinAnti's output too (all -1); JoinInner and
// JoinKeep always write them, JoinSemi never.
type HeldJoinSpec struct {
	Build, Probe []HeldKey
	Mode         JoinMode
	Parts        int
	Split        []int64
	BuildRows    bool
}

// HeldJoin is JoinHeld's output: for each output piece, its int32 probe and build rows (-1
// for no row) in allocations held on the device, padded to a whole word, that the caller owns
// (0 for a piece of no rows; Build nil when not written), and its rows. HostOrdered is
// JoinResult's.
type HeldJoin struct {
	Probe, Build []driver.DevicePtr
	Rows         []int64
	HostOrdered  int
}

// joinTile is the probe rows a thread of the partition order's counting sort takes.
const joinTile = 128

// heldExec is where the held join's steps run: on a device (deviceExec) or, in tests, in the
// PTX interpreter. Addresses are device addresses; words are zeroed when allocated.
type heldExec interface {
	// alloc returns n zeroed words (at least one); keep: the caller of the join owns them.
	alloc(n int64, keep bool) (uint64, error)
	// upload writes words at p.
	upload(p uint64, w []uint64) error
	// launch runs kernel name (its text from gen) over threads threads, blocks of BlockSize.
	launch(name string, gen func(version, target string) string, threads int64, args ...uint64) error
	// scan replaces n words at p by their running sums.
	scan(p uint64, n int64) error
	// word reads the word at p.
	word(p uint64) (uint64, error)
	// copyBytes copies n bytes from src to dst.
	copyBytes(dst, src uint64, n int64) error
	// layoutHost is joinOrderHost.
	layoutHost(slot uint64, nb, size int64, starts, rows uint64) error
}

// heldRows returns the rows of a side's key columns (equal for every column).
func heldRows(what string, keys []HeldKey) (int64, error) {
	if len(keys) == 0 {
		return 0, fmt.Errorf("%s: no key columns", what)
	}
	var n0 int64
	for c, k := range keys {
		if k.Unit != 4 && k.Unit != 8 {
			return 0, fmt.Errorf("%s: key column %d in elements of %d bytes (4 or 8)", what, c, k.Unit)
		}
		if len(k.Pieces) != len(k.Rows) {
			return 0, fmt.Errorf("%s: key column %d has %d pieces and %d row counts", what, c, len(k.Pieces), len(k.Rows))
		}
		var n int64
		for _, r := range k.Rows {
			n += r
		}
		if c == 0 {
			n0 = n
		} else if n != n0 {
			return 0, fmt.Errorf("%s: key column %d has %d rows, column 0 has %d", what, c, n, n0)
		}
	}
	if n0 >= math.MaxInt32 {
		return 0, fmt.Errorf("%s: %d rows (at most %d)", what, n0, math.MaxInt32-1)
	}
	return n0, nil
}

// heldCodes encodes a side's key columns into n rows of words, column-major (the keys of the
// table kernels), on x.
func heldCodes(x heldExec, keys []HeldKey, n int64) (uint64, error) {
	out, err := x.alloc(int64(len(keys))*n, false)
	if err != nil {
		return 0, err
	}
	for c, k := range keys {
		var table uint64
		if k.Table != nil {
			if table, err = x.alloc(int64(len(k.Table)), false); err != nil {
				return 0, err
			}
			if err := x.upload(table, unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(k.Table))), len(k.Table))); err != nil {
				return 0, fmt.Errorf("key column %d's table: %w", c, err)
			}
		}
		at := out + uint64(c)*uint64(n)*8
		for i, p := range k.Pieces {
			if k.Rows[i] == 0 {
				continue
			}
			unit := k.Unit
			gen := func(v, t string) string { return ptx.JoinCodesPTX(v, t, unit) }
			if err := x.launch(ptx.JoinCodesName(unit), gen, k.Rows[i], uint64(p), uint64(k.Rows[i]), table, at); err != nil {
				return 0, fmt.Errorf("key column %d: %w", c, err)
			}
			at += uint64(k.Rows[i]) * 8
		}
	}
	return out, nil
}

// heldTable is the build side's table: HashJoin's kernels over its codes.
type heldTable struct {
	keys                      uint64
	owner, starts, ends, rows uint64
	size                      int64
	hostOrdered               int
}

func buildHeldTable(x heldExec, keys uint64, nb, ncols int64) (*heldTable, error) {
	t := &heldTable{keys: keys, size: int64(joinTableSize(int(nb)))}
	var err error
	for _, p := range []*uint64{&t.owner, &t.ends, &t.starts} {
		if *p, err = x.alloc(t.size, false); err != nil {
			return nil, err
		}
	}
	slot, err := x.alloc(nb, false)
	if err != nil {
		return nil, err
	}
	if t.rows, err = x.alloc(nb, false); err != nil {
		return nil, err
	}
	most, err := x.alloc(1, false)
	if err != nil {
		return nil, err
	}
	if nb == 0 {
		return t, nil
	}
	if err := x.launch(ptx.JoinBuildName, ptx.JoinBuildPTX, nb, keys, uint64(nb), uint64(ncols), t.owner, uint64(t.size-1), slot, t.ends, most); err != nil {
		return nil, err
	}
	m, err := x.word(most)
	if err != nil {
		return nil, err
	}
	if err := x.scan(t.ends, t.size); err != nil {
		return nil, fmt.Errorf("scan of the slot counts: %w", err)
	}
	if m > MaxJoinRun {
		t.hostOrdered = int(m)
		if err := x.layoutHost(slot, nb, t.size, t.starts, t.rows); err != nil {
			return nil, fmt.Errorf("build rows laid out on the host: %w", err)
		}
		return t, nil
	}
	if err := x.copyBytes(t.starts, t.ends, t.size*8); err != nil {
		return nil, err
	}
	if err := x.launch(ptx.JoinPlaceName, ptx.JoinPlacePTX, nb, slot, uint64(nb), t.starts, t.rows); err != nil {
		return nil, err
	}
	if m > 1 {
		if err := x.launch(ptx.JoinOrderName, ptx.JoinOrderPTX, t.size, t.starts, t.ends, uint64(t.size), t.rows); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// heldJoin runs JoinHeld's steps on x and returns the output pieces' allocations (kept) and
// rows.
func heldJoin(x heldExec, s *HeldJoinSpec) (probe, build []uint64, rows []int64, hostOrdered int, err error) {
	fail := func(e error) ([]uint64, []uint64, []int64, int, error) { return nil, nil, nil, 0, e }
	nb, err := heldRows("held join build", s.Build)
	if err != nil {
		return fail(err)
	}
	np, err := heldRows("held join probe", s.Probe)
	if err != nil {
		return fail(err)
	}
	if len(s.Build) != len(s.Probe) {
		return fail(fmt.Errorf("held join: %d build key columns, %d probe", len(s.Build), len(s.Probe)))
	}
	if s.Mode < JoinInner || s.Mode > JoinAnti {
		return fail(fmt.Errorf("held join: mode %d", s.Mode))
	}
	pieces := len(s.Split)
	if s.Parts > 0 {
		pieces = s.Parts
	} else {
		var sum int64
		for _, r := range s.Split {
			sum += r
		}
		if sum != np {
			return fail(fmt.Errorf("held join: the split's %d rows, the probe's %d", sum, np))
		}
	}
	withBuild := s.Mode <= JoinKeep || (s.Mode == JoinAnti && s.BuildRows)
	ncols := int64(len(s.Build))
	bkeys, err := heldCodes(x, s.Build, nb)
	if err != nil {
		return fail(fmt.Errorf("build keys: %w", err))
	}
	pkeys, err := heldCodes(x, s.Probe, np)
	if err != nil {
		return fail(fmt.Errorf("probe keys: %w", err))
	}
	t, err := buildHeldTable(x, bkeys, nb, ncols)
	if err != nil {
		return fail(fmt.Errorf("build: %w", err))
	}
	probe, rows = make([]uint64, pieces), make([]int64, pieces)
	if withBuild {
		build = make([]uint64, pieces)
	}
	if np == 0 {
		return probe, build, rows, t.hostOrdered, nil
	}
	match, err := x.alloc(np, false)
	if err != nil {
		return fail(err)
	}
	emit, err := x.alloc(np, false)
	if err != nil {
		return fail(err)
	}
	if err := x.launch(ptx.JoinProbeCountName, ptx.JoinProbeCountPTX, np, pkeys, uint64(np), uint64(ncols), bkeys, uint64(nb), t.owner, uint64(t.size-1),
		t.starts, t.ends, match, emit, uint64(s.Mode)); err != nil {
		return fail(err)
	}
	// ends[i]: one past the last probe position of piece i.
	ends := make([]int64, pieces)
	var perm uint64
	if s.Parts > 0 {
		if perm, emit, err = partitionOrder(x, pkeys, np, ncols, s.Parts, emit, ends); err != nil {
			return fail(fmt.Errorf("partition order: %w", err))
		}
	} else {
		var at int64
		for i, r := range s.Split {
			at += r
			ends[i] = at
		}
	}
	if err := x.scan(emit, np); err != nil {
		return fail(fmt.Errorf("scan of the probe counts: %w", err))
	}
	// The output rows where each piece ends.
	outEnds := make([]int64, pieces)
	for i, e := range ends {
		if e == 0 {
			continue
		}
		w, err := x.word(emit + uint64(e-1)*8)
		if err != nil {
			return fail(err)
		}
		outEnds[i] = int64(w)
	}
	total := outEnds[pieces-1]
	if total >= math.MaxInt32 {
		return fail(fmt.Errorf("%d output rows (at most %d)", total, math.MaxInt32-1))
	}
	if total == 0 {
		return probe, build, rows, t.hostOrdered, nil
	}
	half := func(n int64) int64 { return (n + 1) / 2 } // words of n int32 rows
	outp, err := x.alloc(half(total), false)
	if err != nil {
		return fail(err)
	}
	var outb uint64
	if withBuild {
		if outb, err = x.alloc(half(total), false); err != nil {
			return fail(err)
		}
	}
	if err := x.launch(ptx.JoinProbeRowsName, ptx.JoinProbeRowsPTX, np, uint64(np), perm, match, emit, t.starts, t.ends, t.rows, outp, outb, uint64(s.Mode)); err != nil {
		return fail(err)
	}
	var from int64
	for i, e := range outEnds {
		n := e - from
		rows[i] = n
		if n > 0 {
			if probe[i], err = x.alloc(half(n), true); err != nil {
				return fail(err)
			}
			if err := x.copyBytes(probe[i], outp+uint64(from)*4, n*4); err != nil {
				return fail(err)
			}
			if withBuild {
				if build[i], err = x.alloc(half(n), true); err != nil {
					return fail(err)
				}
				if err := x.copyBytes(build[i], outb+uint64(from)*4, n*4); err != nil {
					return fail(err)
				}
			}
		}
		from = e
	}
	return probe, build, rows, t.hostOrdered, nil
}

// partitionOrder puts the probe rows in the order of their hash partitions (then of rows):
// it returns the permutation (position -> probe row) and the probe counts emit in its order,
// and writes where each partition's positions end to ends.
func partitionOrder(x heldExec, pkeys uint64, np, ncols int64, parts int, emit uint64, ends []int64) (perm, emitp uint64, err error) {
	part, err := x.alloc(np, false)
	if err != nil {
		return 0, 0, err
	}
	if err := x.launch(ptx.JoinPartName, ptx.JoinPartPTX, np, pkeys, uint64(np), uint64(ncols), uint64(parts), part); err != nil {
		return 0, 0, err
	}
	ntiles := (np + joinTile - 1) / joinTile
	counts, err := x.alloc(int64(parts)*ntiles, false)
	if err != nil {
		return 0, 0, err
	}
	if err := x.launch(ptx.JoinTileCountName, ptx.JoinTileCountPTX, ntiles, part, uint64(np), joinTile, uint64(ntiles), counts); err != nil {
		return 0, 0, err
	}
	if err := x.scan(counts, int64(parts)*ntiles); err != nil {
		return 0, 0, fmt.Errorf("scan of the tiles' counts: %w", err)
	}
	for q := range parts {
		w, err := x.word(counts + uint64(int64(q)*ntiles+ntiles-1)*8)
		if err != nil {
			return 0, 0, err
		}
		ends[q] = int64(w)
	}
	if perm, err = x.alloc(np, false); err != nil {
		return 0, 0, err
	}
	if err := x.launch(ptx.JoinTilePlaceName, ptx.JoinTilePlacePTX, ntiles, part, uint64(np), joinTile, uint64(ntiles), counts, perm); err != nil {
		return 0, 0, err
	}
	if emitp, err = x.alloc(np, false); err != nil {
		return 0, 0, err
	}
	if err := x.launch(ptx.JoinPermuteName, ptx.JoinPermutePTX, np, perm, uint64(np), emit, emitp); err != nil {
		return 0, 0, err
	}
	return perm, emitp, nil
}

// deviceExec is heldExec on a device (its goroutine).
type deviceExec struct {
	d    *Device
	a    *joinAlloc
	kept []driver.DevicePtr
}

func (e *deviceExec) alloc(n int64, keep bool) (uint64, error) {
	if !keep {
		p, err := e.a.words(int(n))
		return uint64(p), err
	}
	p, err := e.d.pool.Alloc(uint64(max(n, 1)) * 8)
	if err != nil {
		return 0, err
	}
	e.kept = append(e.kept, p)
	if err := driver.MemsetD32Async(p, 0, uint64(max(n, 1))*2, e.d.stream); err != nil {
		return 0, fmt.Errorf("zero %d words: %w", n, err)
	}
	return uint64(p), nil
}

func (e *deviceExec) upload(p uint64, w []uint64) error {
	if len(w) == 0 {
		return nil
	}
	if err := e.d.stream.Synchronize(); err != nil { // the zeroing first
		return err
	}
	return driver.MemcpyHtoD(driver.DevicePtr(p), unsafe.Pointer(&w[0]), uint64(len(w))*8)
}

func (e *deviceExec) launch(name string, gen func(version, target string) string, threads int64, args ...uint64) error {
	f, err := e.d.joinKernel(name, gen)
	if err != nil {
		return err
	}
	return e.d.launchWords(f, name, joinBlocks(int(threads)), args...)
}

func (e *deviceExec) scan(p uint64, n int64) error { return e.d.scanWords(driver.DevicePtr(p), n) }

func (e *deviceExec) word(p uint64) (uint64, error) {
	w, err := e.d.downloadWords(driver.DevicePtr(p), 1)
	if err != nil {
		return 0, err
	}
	return w[0], nil
}

func (e *deviceExec) copyBytes(dst, src uint64, n int64) error {
	return driver.MemcpyDtoDAsync(driver.DevicePtr(dst), driver.DevicePtr(src), uint64(n), e.d.stream)
}

func (e *deviceExec) layoutHost(slot uint64, nb, size int64, starts, rows uint64) error {
	return e.d.joinOrderHost(driver.DevicePtr(slot), int(nb), int(size), driver.DevicePtr(starts), driver.DevicePtr(rows))
}

// JoinHeld joins the keys of spec, held on d, on d (HashJoin's kernels over codes encoded
// there) and returns the output's int32 rows held on d, a piece per output partition, which
// the caller owns (Free). Only counts come to the host. Call it from any goroutine.
func (d *Device) JoinHeld(ctx context.Context, spec *HeldJoinSpec) (*HeldJoin, error) {
	t0 := time.Now()
	var out *HeldJoin
	err := d.Do(ctx, func() error {
		a := &joinAlloc{d: d}
		defer a.free()
		x := &deviceExec{d: d, a: a}
		p, b, rows, ho, err := heldJoin(x, spec)
		if err == nil {
			err = d.stream.Synchronize()
		}
		if err != nil {
			for _, k := range x.kept {
				d.pool.Free(k)
			}
			return err
		}
		out = &HeldJoin{Probe: devPtrs(p), Build: devPtrs(b), Rows: rows, HostOrdered: ho}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("held hash join on GPU %d: %w", d.Info.Index, err)
	}
	var n int64
	for _, r := range out.Rows {
		n += r
	}
	Trace("held hash join: %d output rows in %d pieces on GPU %d in %.4f s", n, len(out.Rows), d.Info.Index, time.Since(t0).Seconds())
	return out, nil
}

func devPtrs(w []uint64) []driver.DevicePtr {
	if w == nil {
		return nil
	}
	out := make([]driver.DevicePtr, len(w))
	for i, p := range w {
		out[i] = driver.DevicePtr(p)
	}
	return out
}

// Free gives allocations of d (JoinHeld's pieces) back to its pool; zeros are skipped.
func (d *Device) Free(ps ...driver.DevicePtr) {
	_ = d.Do(context.Background(), func() error {
		for _, p := range ps {
			if p != 0 {
				d.pool.Free(p)
			}
		}
		return nil
	})
}
