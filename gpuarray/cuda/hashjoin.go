package cuda

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// The hash join on a GPU (ptx/hashjoin.go): the build side's keys go into an open-addressing
// table of slots claimed with atom.cas, each key's build rows in a range of one array in row
// order; the probe side counts its output rows per row, the counts are scanned, and the pairs
// are written from each row's offset, so the output's order is fixed (probe rows in order,
// each one's matches in build row order), as dataframe/hashjoin's Probe gives it.

// JoinMode is what a probe emits (ptx.JoinInner, ptx.JoinKeep, ptx.JoinSemi, ptx.JoinAnti).
type JoinMode int

// The probe modes.
const (
	JoinInner JoinMode = ptx.JoinInner // a pair per match
	JoinKeep  JoinMode = ptx.JoinKeep  // and (row, -1) for a probe row without one
	JoinSemi  JoinMode = ptx.JoinSemi  // the probe rows with a match
	JoinAnti  JoinMode = ptx.JoinAnti  // the probe rows without one
)

// MaxJoinRun is the most build rows of one key that JoinOrder sorts on the device (in one
// thread). A build side with a key on more rows (a null key of many rows, a skewed key) has
// its rows laid out in order on the host instead: the slots come down, a counting sort puts
// the rows in slot then row order, and they go back up (JoinResult.HostOrdered says so).
const MaxJoinRun = 1 << 12

// JoinResult is a probe's output: Probe[k] and Build[k] are the rows of output row k (Build
// -1 for an unmatched probe row JoinKeep keeps; nil for JoinSemi and JoinAnti), and Matched
// says which build rows matched a probe row (JoinInner and JoinKeep). HostOrdered, when not
// 0, is the longest key run of the build side, whose rows the host laid out (MaxJoinRun).
type JoinResult struct {
	Probe, Build []int32
	Matched      []bool
	HostOrdered  int
}

// joinTableSize is the table's slots for n build rows: a power of two at least 2n (16 at
// least), as hashjoin's.
func joinTableSize(n int) int {
	size := 16
	for size < 2*n {
		size <<= 1
	}
	return size
}

// checkJoinKeys checks that keys are columns of one length and returns it.
func checkJoinKeys(what string, keys [][]int64) (int, error) {
	if len(keys) == 0 {
		return 0, fmt.Errorf("%s: no key columns", what)
	}
	for i, c := range keys {
		if len(c) != len(keys[0]) {
			return 0, fmt.Errorf("%s: key column %d has %d rows, column 0 has %d", what, i, len(c), len(keys[0]))
		}
	}
	if len(keys[0]) >= math.MaxInt32 {
		return 0, fmt.Errorf("%s: %d rows (at most %d)", what, len(keys[0]), math.MaxInt32-1)
	}
	return len(keys[0]), nil
}

// joinAlloc is the device buffers of one join, freed together.
type joinAlloc struct {
	d    *Device
	ptrs []driver.DevicePtr
}

// words allocates n zeroed words (at least one).
func (a *joinAlloc) words(n int) (driver.DevicePtr, error) {
	p, err := a.d.pool.Alloc(uint64(max(n, 1)) * 8)
	if err != nil {
		return 0, err
	}
	a.ptrs = append(a.ptrs, p)
	if err := driver.MemsetD32Async(p, 0, uint64(max(n, 1))*2, a.d.stream); err != nil {
		return 0, fmt.Errorf("zero %d words: %w", n, err)
	}
	return p, nil
}

// keys uploads key columns column-major.
func (a *joinAlloc) keys(keys [][]int64, n int) (driver.DevicePtr, error) {
	p, err := a.words(len(keys) * n)
	if err != nil {
		return 0, err
	}
	if n == 0 {
		return p, nil
	}
	if err := a.d.stream.Synchronize(); err != nil { // the zeroing first
		return 0, err
	}
	for c, col := range keys {
		if err := driver.MemcpyHtoD(p+driver.DevicePtr(c*n*8), unsafe.Pointer(&col[0]), uint64(n)*8); err != nil {
			return 0, fmt.Errorf("upload key column %d: %w", c, err)
		}
	}
	return p, nil
}

func (a *joinAlloc) free() {
	for _, p := range a.ptrs {
		a.d.pool.Free(p)
	}
}

// download copies n words at p to the host.
func (d *Device) downloadWords(p driver.DevicePtr, n int) ([]uint64, error) {
	out := make([]uint64, n)
	if n == 0 {
		return out, nil
	}
	if err := d.stream.Synchronize(); err != nil {
		return nil, err
	}
	if err := driver.MemcpyDtoH(unsafe.Pointer(&out[0]), p, uint64(n)*8); err != nil {
		return nil, fmt.Errorf("download %d words: %w", n, err)
	}
	return out, nil
}

// scanWords replaces n int64 words at p by their running sums (on the device goroutine).
func (d *Device) scanWords(p driver.DevicePtr, n int64) error {
	scan := &plan.CallStep{Call: expr.Call{Fn: expr.FnCumSum}, DType: dtype.Int64}
	return d.scanWalk(scan, p, scanLines{outer: 1, n: n, inner: 1}, max(1, min(n/256, scanWarps, MaxSlices)))
}

func joinBlocks(n int) uint32 { return uint32((int64(n) + BlockSize - 1) / BlockSize) }

// joinKernel returns one of the join kernels, generated and linked the first time.
func (d *Device) joinKernel(name string, gen func(version, target string) string) (driver.Function, error) {
	return d.generated(name, func() (string, error) { return gen(d.lib.Version(), d.lib.Target()), nil })
}

// HashJoin joins probe's rows against build's on d (both sides' keys as in ptx/hashjoin.go:
// columns of int64 codes, null flags as columns of their own; equal column counts) and returns
// the pairs in probe row order, each probe row's build rows in order. Call it from any
// goroutine.
func (d *Device) HashJoin(ctx context.Context, build, probe [][]int64, mode JoinMode) (*JoinResult, error) {
	nb, err := checkJoinKeys("hash join build", build)
	if err != nil {
		return nil, err
	}
	np, err := checkJoinKeys("hash join probe", probe)
	if err != nil {
		return nil, err
	}
	if len(build) != len(probe) {
		return nil, fmt.Errorf("hash join: %d build key columns, %d probe", len(build), len(probe))
	}
	t0 := time.Now()
	var res *JoinResult
	err = d.Do(ctx, func() error {
		var err error
		res, err = d.hashJoin(build, probe, nb, np, mode)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("hash join of %d probe rows against %d on GPU %d: %w", np, nb, d.Info.Index, err)
	}
	Trace("hash join: %d probe rows against %d build rows, %d out, on GPU %d in %.4f s", np, nb, len(res.Probe), d.Info.Index, time.Since(t0).Seconds())
	return res, nil
}

// hashJoin is HashJoin on the device goroutine.
func (d *Device) hashJoin(build, probe [][]int64, nb, np int, mode JoinMode) (*JoinResult, error) {
	a := &joinAlloc{d: d}
	defer a.free()
	size := joinTableSize(nb)
	ncols := uint64(len(build))
	bkeys, err := a.keys(build, nb)
	if err != nil {
		return nil, err
	}
	pkeys, err := a.keys(probe, np)
	if err != nil {
		return nil, err
	}
	owner, err := a.words(size)
	if err != nil {
		return nil, err
	}
	ends, err := a.words(size)
	if err != nil {
		return nil, err
	}
	starts, err := a.words(size)
	if err != nil {
		return nil, err
	}
	slot, err := a.words(nb)
	if err != nil {
		return nil, err
	}
	rows, err := a.words(nb)
	if err != nil {
		return nil, err
	}
	most, err := a.words(1)
	if err != nil {
		return nil, err
	}
	hostOrdered := 0
	if nb > 0 {
		fb, err := d.joinKernel(ptx.JoinBuildName, ptx.JoinBuildPTX)
		if err != nil {
			return nil, err
		}
		if err := d.launchWords(fb, ptx.JoinBuildName, joinBlocks(nb), uint64(bkeys), uint64(nb), ncols, uint64(owner), uint64(size-1), uint64(slot), uint64(ends), uint64(most)); err != nil {
			return nil, err
		}
		m, err := d.downloadWords(most, 1)
		if err != nil {
			return nil, err
		}
		if err := d.scanWords(ends, int64(size)); err != nil {
			return nil, fmt.Errorf("scan of the slot counts: %w", err)
		}
		if m[0] > MaxJoinRun {
			hostOrdered = int(m[0])
			if err := d.joinOrderHost(slot, nb, size, starts, rows); err != nil {
				return nil, fmt.Errorf("build rows laid out on the host: %w", err)
			}
		} else {
			if err := driver.MemcpyDtoDAsync(starts, ends, uint64(size)*8, d.stream); err != nil {
				return nil, err
			}
			fp, err := d.joinKernel(ptx.JoinPlaceName, ptx.JoinPlacePTX)
			if err != nil {
				return nil, err
			}
			if err := d.launchWords(fp, ptx.JoinPlaceName, joinBlocks(nb), uint64(slot), uint64(nb), uint64(starts), uint64(rows)); err != nil {
				return nil, err
			}
		}
		if m[0] > 1 && m[0] <= MaxJoinRun {
			fo, err := d.joinKernel(ptx.JoinOrderName, ptx.JoinOrderPTX)
			if err != nil {
				return nil, err
			}
			if err := d.launchWords(fo, ptx.JoinOrderName, joinBlocks(size), uint64(starts), uint64(ends), uint64(size), uint64(rows)); err != nil {
				return nil, err
			}
		}
	}
	res := &JoinResult{HostOrdered: hostOrdered}
	if np == 0 {
		if mode <= JoinKeep {
			res.Matched = make([]bool, nb)
		}
		return res, nil
	}
	match, err := a.words(np)
	if err != nil {
		return nil, err
	}
	emit, err := a.words(np)
	if err != nil {
		return nil, err
	}
	fc, err := d.joinKernel(ptx.JoinProbeCountName, ptx.JoinProbeCountPTX)
	if err != nil {
		return nil, err
	}
	if err := d.launchWords(fc, ptx.JoinProbeCountName, joinBlocks(np), uint64(pkeys), uint64(np), ncols, uint64(bkeys), uint64(nb), uint64(owner), uint64(size-1),
		uint64(starts), uint64(ends), uint64(match), uint64(emit), uint64(mode)); err != nil {
		return nil, err
	}
	if err := d.scanWords(emit, int64(np)); err != nil {
		return nil, fmt.Errorf("scan of the probe counts: %w", err)
	}
	last, err := d.downloadWords(emit+driver.DevicePtr((np-1)*8), 1)
	if err != nil {
		return nil, err
	}
	total := int(last[0])
	if total >= math.MaxInt32 {
		return nil, fmt.Errorf("%d output rows (at most %d)", total, math.MaxInt32-1)
	}
	outp, err := a.words(total)
	if err != nil {
		return nil, err
	}
	outb, err := a.words(total)
	if err != nil {
		return nil, err
	}
	matched, err := a.words(nb)
	if err != nil {
		return nil, err
	}
	fw, err := d.joinKernel(ptx.JoinProbePairsName, ptx.JoinProbePairsPTX)
	if err != nil {
		return nil, err
	}
	if err := d.launchWords(fw, ptx.JoinProbePairsName, joinBlocks(np), uint64(np), uint64(match), uint64(emit), uint64(starts), uint64(ends), uint64(rows),
		uint64(outp), uint64(outb), uint64(matched), uint64(mode)); err != nil {
		return nil, err
	}
	p, err := d.downloadWords(outp, total)
	if err != nil {
		return nil, err
	}
	res.Probe = narrowRows(p)
	if mode >= JoinSemi {
		return res, nil
	}
	b, err := d.downloadWords(outb, total)
	if err != nil {
		return nil, err
	}
	res.Build = narrowRows(b)
	m, err := d.downloadWords(matched, nb)
	if err != nil {
		return nil, err
	}
	res.Matched = make([]bool, nb)
	for i, w := range m {
		res.Matched[i] = w != 0
	}
	return res, nil
}

// joinOrderHost lays the build rows out in slot then row order on the host (a counting sort of
// the slots JoinBuild gave them) and writes them, and where each slot's range starts, to rows
// and starts: what JoinPlace and JoinOrder leave, for a build side with a key run too long
// for JoinOrder.
func (d *Device) joinOrderHost(slot driver.DevicePtr, nb, size int, starts, rows driver.DevicePtr) error {
	s, err := d.downloadWords(slot, nb)
	if err != nil {
		return err
	}
	at := make([]uint64, size)
	for _, x := range s {
		at[x]++
	}
	var run uint64
	for i, c := range at {
		at[i] = run
		run += c
	}
	if err := driver.MemcpyHtoD(starts, unsafe.Pointer(&at[0]), uint64(size)*8); err != nil {
		return err
	}
	out := make([]uint64, nb)
	for i, x := range s {
		out[at[x]] = uint64(i)
		at[x]++
	}
	return driver.MemcpyHtoD(rows, unsafe.Pointer(&out[0]), uint64(nb)*8)
}

// narrowRows converts row words (all ones for -1) to int32 rows, blocks of them on every core
// (a join's pairs at 1e8 rows took 0.4 s on one).
func narrowRows(w []uint64) []int32 {
	out := make([]int32, len(w))
	const block = 1 << 20
	nb := (len(w) + block - 1) / block
	var wg sync.WaitGroup
	next := atomic.Int64{}
	for range min(nb, runtime.GOMAXPROCS(0)) {
		wg.Go(func() {
			for b := int(next.Add(1) - 1); b < nb; b = int(next.Add(1) - 1) {
				lo, hi := b*block, min(len(w), (b+1)*block)
				for i, x := range w[lo:hi] {
					out[lo+i] = int32(int64(x))
				}
			}
		})
	}
	wg.Wait()
	return out
}

// HashPartition returns every row's partition in [0, parts) by its key's hash, computed on d
// (hashjoin.Partition's: equal keys in one partition, the same partition as the host's).
func (d *Device) HashPartition(ctx context.Context, keys [][]int64, parts int) ([]int32, error) {
	n, err := checkJoinKeys("hash partition", keys)
	if err != nil {
		return nil, err
	}
	if parts < 1 {
		return nil, fmt.Errorf("hash partition: %d partitions", parts)
	}
	var out []int32
	err = d.Do(ctx, func() error {
		a := &joinAlloc{d: d}
		defer a.free()
		k, err := a.keys(keys, n)
		if err != nil {
			return err
		}
		o, err := a.words(n)
		if err != nil {
			return err
		}
		if n > 0 {
			f, err := d.joinKernel(ptx.JoinPartName, ptx.JoinPartPTX)
			if err != nil {
				return err
			}
			if err := d.launchWords(f, ptx.JoinPartName, joinBlocks(n), uint64(k), uint64(n), uint64(len(keys)), uint64(parts), uint64(o)); err != nil {
				return err
			}
		}
		w, err := d.downloadWords(o, n)
		if err != nil {
			return err
		}
		out = narrowRows(w)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("hash partition of %d rows on GPU %d: %w", n, d.Info.Index, err)
	}
	return out, nil
}
