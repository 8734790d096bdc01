package cufft

import (
	"context"
	"fmt"
	"math"
	"os"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
)

// One line that one cuFFT plan does not take (issue 32 item 2) is transformed in four steps on
// the device (fft.RunFourStep): cuFFT's batched transforms down the columns and along the rows
// of the line seen as an n1 x n2 matrix, in groups whose work areas fit the pool, the twiddles
// and the transpose by generated kernels (cuda.TwiddleRows, cuda.TransposePairs; the scale is
// folded into the transpose). The line's own buffer holds the first three steps; the transpose
// writes a second one, which becomes the result.

// fourStepEnv forces the four steps ("1", for tests: any line that splits) or turns them off
// ("0": a line one plan cannot take is refused, as before).
const fourStepEnv = "GPUNOTES_CUFFT_FOURSTEP"

// fourStepChoice says why the line l (one line: l.Count() == 1; l.N the transform's length) of a
// Z2Z transform, or of a D2Z or Z2D one (t; the real line's value pairs transformed as a complex
// line of half its length, an even one), on d goes in four steps, with the split of the complex line, or "" for one plan
// (fourStepReason); the four steps need a second buffer of the line's size (16 bytes a complex
// value, 8 bytes a real one and as much for its copy), which must fit in what the pool has
// left. Call it on the device goroutine.
func fourStepChoice(d *cuda.Device, l fft.Lines, t fftType) (why string, n1, n2 int, err error) {
	n := l.N
	m := n // the complex line's length
	key := planKey{dev: d, t: typeZ2Z, n: int64(n), inLen: int64(n), outLen: int64(n), stride: 1, idist: int64(n), odist: int64(n), batch: 1}
	switch t {
	case typeD2Z, typeZ2D:
		if n%2 != 0 || n < 8 {
			return "", 0, 0, nil
		}
		m = n / 2
		key = planKey{dev: d, t: typeD2Z, n: int64(n), inLen: int64(n), outLen: int64(m + 1), stride: 1, idist: int64(n), odist: int64(m + 1), batch: 1}
		if t == typeZ2D {
			key = planKey{dev: d, t: typeZ2D, n: int64(n), inLen: int64(m + 1), outLen: int64(n), stride: 1, idist: int64(m + 1), odist: int64(n), batch: 1}
		}
	}
	why = fourStepReason(os.Getenv(fourStepEnv), l, func() (uint64, error) {
		if !planCaching {
			return 0, nil // the uncached path (a measurement's switch) plans as it always did
		}
		cp, err := planFor(key)
		if err != nil {
			return 0, err
		}
		return cp.work, nil
	}, func(need uint64) uint64 {
		if need > d.Pool().Available() {
			d.Pool().Reclaim() // as the work area's allocation would, before giving up one plan
		}
		return d.Pool().Available()
	})
	if why == "" {
		return "", 0, 0, nil
	}
	n1, n2, err = fft.FourStepSplit(m, planLimit)
	if err != nil {
		return "", 0, 0, fmt.Errorf("cufft: a line of %d elements is %s, and the four steps cannot split it: %w", n, why, err)
	}
	need := uint64(n) * 16 // a second buffer: n complex values, or a real line's copy and pairs
	if n1 == n2 {
		need = 0 // a square split is transposed in place
		if t != typeZ2Z {
			need = uint64(n) * 8 // the copy or the pairs
		}
	}
	if need > d.Pool().Available() {
		return "", 0, 0, fmt.Errorf("cufft: a line of %d elements is %s, and the four steps' second buffer of %s does not fit in the %s the pool has left: %w", n, why, bytesText(need), bytesText(d.Pool().Available()), cuda.ErrOutOfMemory)
	}
	return why, n1, n2, nil
}

// fourStepReason is the planning decision of fourStepChoice, given the variable's value
// (mode), the lines, the one plan's work area (onePlan, asked only where it matters: it plans)
// and the bytes the pool has left for it (room, which may make room first): why one line goes
// in four steps, or "" for one plan. Several
// lines, a line too short to split, or mode "0" take one plan; mode "1" forces the four steps;
// else a line goes in four steps when it is longer than a plan takes, when cuFFT cannot plan it
// in one, or when one plan's work area does not fit in what the pool has left.
func fourStepReason(mode string, l fft.Lines, onePlan func() (uint64, error), room func(need uint64) uint64) string {
	if l.Count() != 1 || l.N < 4 || mode == "0" {
		return ""
	}
	switch {
	case mode == "1":
		return "forced by " + fourStepEnv + "=1"
	case l.N > planLimit:
		return fmt.Sprintf("longer than one cuFFT plan takes (%d)", planLimit)
	}
	work, err := onePlan()
	if err != nil {
		return fmt.Sprintf("cuFFT cannot plan it in one (%v)", err)
	}
	if avail := room(work); work > avail {
		return fmt.Sprintf("one plan's work area of %s does not fit in the %s the pool has left", bytesText(work), bytesText(avail))
	}
	return ""
}

// fourStepNote is what Path says of a line transformed in four steps.
func fourStepNote(n, n1, n2 int, why string) string {
	return fmt.Sprintf("one line of %d in four steps on the device (%d x %d: column transforms, twiddles, row transforms, %s; %s)", n, n1, n2, transposeText(n1, n2), why)
}

// transposeText names the four steps' last step.
func transposeText(n1, n2 int) string {
	if n1 == n2 {
		return "a transpose in place"
	}
	return "a transpose"
}

// realFourStepNote is what Path says of a real line transformed in four steps.
func realFourStepNote(n, n1, n2 int, why string) string {
	return fmt.Sprintf("one real line of %d in four steps on the device (its value pairs as %d x %d: column transforms, twiddles, row transforms, %s, then the half spectrum from the pairs; %s)", n, n1, n2, transposeText(n1, n2), why)
}

// inverseRealNote is what Path says of an inverse real line transformed in four steps.
func inverseRealNote(n, n1, n2 int, why string) string {
	return fmt.Sprintf("one real line of %d in four steps on the device (the half spectrum to %d x %d value pairs, then column transforms, twiddles, row transforms, %s; %s)", n, n1, n2, transposeText(n1, n2), why)
}

// inverseRealFourStepOnDevice returns a new allocation of d's pool holding the real line of
// n = 2*n1*n2 values whose half spectrum (n/2+1 complex values, the imaginary parts NumPy
// ignores already zeroed: PrepareLines' ZeroEnds) is at x, unnormalized and times scale: the
// half spectrum to n/2 values (cuda.PairsFromHalf), their inverse in four steps, which are the
// line's values in pairs (scale multiplies them as complex values: pass 1 and scale the real
// words after, as the host scales them). Call it on the device goroutine.
func inverseRealFourStepOnDevice(ctx context.Context, d *cuda.Device, x driver.DevicePtr, n1, n2 int, scale float64) (driver.DevicePtr, error) {
	m := n1 * n2
	y, err := d.Pool().Alloc(uint64(m) * 16)
	if err != nil {
		return 0, fmt.Errorf("cufft: the four steps' pairs: %w", err)
	}
	out := driver.DevicePtr(0)
	defer func() {
		if out != y {
			d.Pool().Free(y)
		}
	}()
	hi, lo, shift, free, err := twiddleTables(d, 2*m)
	if err != nil {
		return 0, err
	}
	defer free()
	if err := d.PairsFromHalf(y, x, hi, lo, int64(m), shift); err != nil {
		return 0, fmt.Errorf("cufft: %w", err)
	}
	out, err = fourStepOnDevice(ctx, d, y, n1, n2, true, scale)
	return out, err
}

// twiddleTables uploads fft.TwiddleTables(n) to d's pool: the tables' addresses, their shift,
// and free, which gives them back once d's stream is done with them. Call it on the device
// goroutine.
func twiddleTables(d *cuda.Device, n int) (hi, lo driver.DevicePtr, shift int, free func(), err error) {
	th, tl, shift := fft.TwiddleTables(n)
	pool := d.Pool()
	tables, err := pool.Alloc(uint64(len(th)+len(tl)) * 16)
	if err != nil {
		return 0, 0, 0, nil, fmt.Errorf("cufft: twiddle tables: %w", err)
	}
	free = func() {
		_ = d.Stream().Synchronize() // the kernels read the tables until the stream is done
		pool.Free(tables)
	}
	lo = tables + driver.DevicePtr(16*len(th))
	if err := d.CopyToDevice(tables, floats(th)); err != nil {
		free()
		return 0, 0, 0, nil, fmt.Errorf("cufft: twiddle tables: %w", err)
	}
	if err := d.CopyToDevice(lo, floats(tl)); err != nil {
		free()
		return 0, 0, 0, nil, fmt.Errorf("cufft: twiddle tables: %w", err)
	}
	return tables, lo, shift, free, nil
}

// realFourStepOnDevice writes to dst (m+1 complex values) the half spectrum of the real line of
// n = 2*n1*n2 float64 values at a, every coefficient multiplied by scale: the line's value pairs
// a complex line of n1*n2 transformed in four steps (a is left holding their intermediate
// values), then the half spectrum from the pairs (cuda.RealFromPairs). Call it on the device
// goroutine.
func realFourStepOnDevice(ctx context.Context, d *cuda.Device, a, dst driver.DevicePtr, n1, n2 int, scale float64) error {
	m := n1 * n2
	z, err := fourStepOnDevice(ctx, d, a, n1, n2, false, 1)
	if err != nil {
		return err
	}
	if z != a {
		defer d.Pool().Free(z)
	}
	hi, lo, shift, free, err := twiddleTables(d, 2*m)
	if err != nil {
		return err
	}
	defer free()
	if err := d.RealFromPairs(dst, z, hi, lo, int64(m), shift, scale); err != nil {
		return fmt.Errorf("cufft: %w", err)
	}
	return nil
}

// fourStepOnDevice transforms the line of n1*n2 complex values at a (pairs of float64 words)
// in four steps on d, forward or inverse (unnormalized), every result multiplied by scale, and
// returns where the result is: a itself for a square split (transposed in place), else a new
// allocation of d's pool, a left holding the steps' intermediate values. Call it on the device
// goroutine.
func fourStepOnDevice(ctx context.Context, d *cuda.Device, a driver.DevicePtr, n1, n2 int, inverse bool, scale float64) (driver.DevicePtr, error) {
	pool := d.Pool()
	n := n1 * n2
	tables, loAt, shift, free, err := twiddleTables(d, n)
	if err != nil {
		return 0, err
	}
	defer free()
	out := a // a square split is transposed in place
	if n1 != n2 {
		if out, err = pool.Alloc(uint64(n) * 16); err != nil {
			return 0, fmt.Errorf("cufft: the four steps' result: %w", err)
		}
	}
	fail := func(err error) (driver.DevicePtr, error) {
		if out != a {
			pool.Free(out)
		}
		return 0, fmt.Errorf("cufft: %w", err)
	}
	s := &deviceSteps{d: d, a: a, out: out, hi: tables, lo: loAt, shift: shift}
	t0 := time.Now()
	if err := fft.RunFourStep(ctx, s, n1, n2, inverse, scale); err != nil {
		return fail(err)
	}
	if err := d.Stream().Synchronize(); err != nil {
		return fail(err)
	}
	cuda.Trace("cufft: one line of %d in four steps (%d x %d) on GPU %d in %.4f s", n, n1, n2, d.Info.Index, time.Since(t0).Seconds())
	return out, nil
}

// deviceSteps are the four steps' operations on d (fft.FourStepOps): the buffer at a, the
// result at out, the twiddle tables at hi and lo.
type deviceSteps struct {
	d      *cuda.Device
	a, out driver.DevicePtr
	hi, lo driver.DevicePtr
	shift  int
}

func (s *deviceSteps) Lines(ctx context.Context, l fft.Lines, inverse bool) error {
	return linesInGroups(ctx, s.d, s.a, l, inverse)
}

func (s *deviceSteps) Twiddle(_ context.Context, n1, n2 int, inverse bool) error {
	return s.d.TwiddleRows(s.a, s.hi, s.lo, int64(n1), int64(n2), s.shift, inverse)
}

func (s *deviceSteps) Transpose(_ context.Context, rows, cols int, scale float64) error {
	if s.out == s.a {
		if rows != cols {
			return fmt.Errorf("cufft: a transpose of %d x %d in place", rows, cols)
		}
		return s.d.TransposeSquare(s.a, int64(rows), scale)
	}
	return s.d.TransposePairs(s.out, s.a, int64(rows), int64(cols), scale)
}

// linesInGroups runs in-place Z2Z transforms of the lines l of the buffer at a, which are
// either contiguous (Inner 1: rows) or one run of lines of stride Inner (Outer 1: columns),
// in groups of lines whose work area takes at most half of what the pool has left; a group
// whose elements lie over 2^31 apart is planned with 64-bit sizes. Call it on the device
// goroutine.
func linesInGroups(ctx context.Context, d *cuda.Device, a driver.DevicePtr, l fft.Lines, inverse bool) error {
	if l.Inner > 1 && l.Outer != 1 {
		return fmt.Errorf("cufft: lines %+v are neither rows nor columns", l)
	}
	dir := dirForward
	if inverse {
		dir = dirInverse
	}
	exec := func(p handle, in, out driver.DevicePtr) result { return execZ2Z(p, in, out, dir) }
	count, n := l.Count(), l.N
	if n > planLimit || l.Inner > planLimit {
		return fmt.Errorf("cufft: lines of %d elements, %d apart, are more than one cuFFT plan takes (%d)", n, l.Inner, planLimit)
	}
	keyOf := func(batch int) planKey {
		k := planKey{dev: d, t: typeZ2Z, n: int64(n), inLen: int64(n), outLen: int64(n), batch: int64(batch)}
		extent := int64(batch) * int64(n) // rows: the group's elements
		if l.Inner > 1 {
			k.stride, k.idist, k.odist = int64(l.Inner), 1, 1
			extent = int64(n-1)*int64(l.Inner) + int64(batch)
		} else {
			k.stride, k.idist, k.odist = 1, int64(n), int64(n)
		}
		k.wide = extent > math.MaxInt32
		return k
	}
	lineBytes := driver.DevicePtr(16) // where the next line starts
	if l.Inner == 1 {
		lineBytes = driver.DevicePtr(16 * n)
	}
	group := min(count, planLimit)
	for {
		cp, err := planFor(keyOf(group))
		if err == nil && cp.work <= d.Pool().Available()/2 {
			break
		}
		if group == 1 {
			if err != nil {
				return err
			}
			return fmt.Errorf("cufft: the work area of one transform of %d elements (%s) does not fit in half the %s the pool has left: %w", n, bytesText(cp.work), bytesText(d.Pool().Available()), cuda.ErrOutOfMemory)
		}
		group = (group + 1) / 2
	}
	rounds := count / group
	at := func(base driver.DevicePtr) func(r int) (driver.DevicePtr, driver.DevicePtr) {
		return func(r int) (driver.DevicePtr, driver.DevicePtr) {
			p := base + driver.DevicePtr(r*group)*lineBytes
			return p, p
		}
	}
	if err := execCached(d, keyOf(group), rounds, at(a), exec, ctx.Err); err != nil {
		return err
	}
	if rest := count - rounds*group; rest > 0 {
		base := a + driver.DevicePtr(rounds*group)*lineBytes
		if err := execCached(d, keyOf(rest), 1, at(base), exec, ctx.Err); err != nil {
			return err
		}
	}
	return nil
}

// bytesText writes a byte count for a user (GB with one decimal, else MB).
func bytesText(n uint64) string {
	if n >= 1e9 {
		return fmt.Sprintf("%.1f GB", float64(n)/1e9)
	}
	return fmt.Sprintf("%.1f MB", float64(n)/1e6)
}
