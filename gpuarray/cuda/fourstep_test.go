package cuda

import (
	"context"
	"fmt"
	"math"
	"math/cmplx"
	"math/rand/v2"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
)

// mulGo is Go's complex product a*b with every operation rounded (the explicit conversions
// forbid a fused multiply-add): re = ar*br - ai*bi, im = ar*bi + ai*br.
func mulGo(a, b complex128) complex128 {
	re := float64(real(a)*real(b)) - float64(imag(a)*imag(b))
	im := float64(real(a)*imag(b)) + float64(imag(a)*real(b))
	return complex(re, im)
}

// putPairs writes complex values to mem at base as pairs of float64 words.
func putPairs(mem map[uint64]uint64, base uint64, v []complex128) {
	for i, z := range v {
		mem[base+uint64(16*i)] = math.Float64bits(real(z))
		mem[base+uint64(16*i+8)] = math.Float64bits(imag(z))
	}
}

// samePairs checks the n pairs at base against want bit for bit (any NaN for a NaN).
func samePairs(t *testing.T, what string, mem map[uint64]uint64, base uint64, want []complex128) {
	t.Helper()
	for i, z := range want {
		for h, w := range []float64{real(z), imag(z)} {
			got, ok := mem[base+uint64(16*i+8*h)]
			if !ok {
				t.Fatalf("%s: word %d of value %d was not written", what, h, i)
			}
			g := math.Float64frombits(got)
			if got != math.Float64bits(w) && !(math.IsNaN(g) && math.IsNaN(w)) {
				t.Fatalf("%s: value %d word %d is %v (%#x), want %v (%#x)", what, i, h, g, got, w, math.Float64bits(w))
			}
		}
	}
}

// TestTwiddlePTX interprets the four-step transform's twiddle kernel over matrices n1 x n2 (a
// row, a column, square, oblong, more rows than the grid's two blocks): element (r, c) becomes
// v * w^(r*c) with w^j the tables' product hi[j>>shift] * lo[j&mask] (fft.TwiddleTables), or
// v * conj(w^j), bit for bit as Go's complex products compute them on the host, signed zeros
// and the host four-step's own twiddle (fft.TwiddleAt) included; nothing past the matrix is
// written.
func TestTwiddlePTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(11, 12))
	const p, hiAt, loAt, blocks = 1 << 40, 1 << 41, 1 << 42, 2
	for _, s := range [][2]int{{1, 7}, {6, 1}, {3, 5}, {16, 16}, {7, 300}, {5, 513}} {
		n1, n2 := s[0], s[1]
		n := n1 * n2
		hi, lo, shift := fft.TwiddleTables(n)
		for _, conj := range []bool{false, true} {
			what := fmt.Sprintf("twiddles %d x %d conj %v", n1, n2, conj)
			x := make([]complex128, n)
			for i := range x {
				x[i] = complex(rs.NormFloat64(), rs.NormFloat64())
			}
			x[0] = complex(math.Copysign(0, -1), 0)
			if n > 3 {
				x[3] = complex(1.5, math.Copysign(0, -1))
			}
			mem := map[uint64]uint64{}
			putPairs(mem, p, x)
			putPairs(mem, hiAt, hi)
			putPairs(mem, loAt, lo)
			want := make([]complex128, n)
			for r := range n1 {
				for c := range n2 {
					j := r * c
					w := mulGo(hi[j>>shift], lo[j&(1<<shift-1)])
					if w != fft.TwiddleAt(n, j) {
						t.Fatalf("%s: the tables' product %v is not the host's twiddle %v", what, w, fft.TwiddleAt(n, j))
					}
					if conj {
						w = complex(real(w), -imag(w))
					}
					want[r*n2+c] = mulGo(x[r*n2+c], w)
				}
			}
			prog := ptxtest.Parse(t, twiddlePTX("8.0", "sm_90", conj))
			for b := range blocks {
				ptxtest.Run(t, prog, b, 0, map[string]uint64{"p": p, "hi": hiAt, "lo": loAt, "n1": uint64(n1), "n2": uint64(n2), "shift": uint64(shift), "nctaid.x": blocks}, mem, nil)
			}
			samePairs(t, what, mem, p, want)
			if _, ok := mem[p+uint64(16*n)]; ok {
				t.Fatalf("%s: wrote past the matrix", what)
			}
		}
	}
}

// TestTransposePTX interprets the four-step transform's transpose kernel over matrices whose
// sides are below, at and past the 32-wide tiles, in a grid of three blocks that walk the
// tiles: dst[c*rows + r] is src[r*cols + c] bit for bit (NaN, infinities, signed zeros kept),
// or with a scale the value times complex(scale, 0) as Device.ScaleWords multiplies; nothing
// past the matrix is written.
func TestTransposePTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(13, 14))
	const src, dst, blocks = 1 << 40, 1 << 41, 3
	for _, s := range [][2]int{{1, 1}, {1, 40}, {40, 1}, {3, 5}, {32, 32}, {33, 70}, {70, 33}, {64, 8}} {
		rows, cols := s[0], s[1]
		x := make([]complex128, rows*cols)
		for i := range x {
			x[i] = complex(rs.NormFloat64(), rs.NormFloat64())
		}
		special := []complex128{complex(math.Copysign(0, -1), math.Inf(1)), complex(math.NaN(), -2), complex(3, math.Copysign(0, -1)), complex(math.Inf(-1), 0)}
		for i, v := range special {
			if i < len(x) {
				x[len(x)-1-i] = v
			}
		}
		for _, scale := range []float64{1, 0.25, 1.0 / 3} {
			what := fmt.Sprintf("transpose %d x %d scale %v", rows, cols, scale)
			mem := map[uint64]uint64{}
			putPairs(mem, src, x)
			want := make([]complex128, len(x))
			for r := range rows {
				for c := range cols {
					v := x[r*cols+c]
					if scale != 1 {
						v = mulGo(v, complex(scale, 0))
					}
					want[c*rows+r] = v
				}
			}
			prog := ptxtest.Parse(t, transposePTX("8.0", "sm_90", scale != 1))
			for b := range blocks {
				ptxtest.Run(t, prog, b, 0, map[string]uint64{"dst": dst, "src": src, "rows": uint64(rows), "cols": uint64(cols), "s": math.Float64bits(scale), "nctaid.x": blocks}, mem, nil)
			}
			samePairs(t, what, mem, dst, want)
			written := 0
			for a := range mem {
				if a >= dst {
					written++
				}
			}
			if written != 2*len(x) {
				t.Fatalf("%s: %d words written, want %d", what, written, 2*len(x))
			}
		}
	}
}

// interpSteps runs the four steps as Device's launches run them, on the host: the twiddle and
// transpose kernels interpreted over mem with the arguments and grids that TwiddleRows and
// TransposePairs launch with, the column and row transforms (cuFFT's on a GPU) by package fft
// on the words at a.
type interpSteps struct {
	mem             map[uint64]uint64
	a, out, hi, lo  uint64
	n, shift        int
	twiddle, transp map[bool]*ptxtest.Program
	square          map[bool]*ptxtest.Program
	t               *testing.T
}

func (s *interpSteps) pairs(at uint64) []complex128 {
	x := make([]complex128, s.n)
	for i := range x {
		x[i] = complex(math.Float64frombits(s.mem[at+uint64(16*i)]), math.Float64frombits(s.mem[at+uint64(16*i+8)]))
	}
	return x
}

func (s *interpSteps) Lines(ctx context.Context, l fft.Lines, inverse bool) error {
	x := s.pairs(s.a)
	if err := fft.Complex(ctx, x, l, inverse, 1); err != nil {
		return err
	}
	putPairs(s.mem, s.a, x)
	return nil
}

func (s *interpSteps) run(p *ptxtest.Program, names []string, args []uint64, blocks uint32) {
	params := map[string]uint64{"nctaid.x": uint64(blocks)}
	for i, n := range names {
		params[n] = args[i]
	}
	for b := range int(blocks) {
		ptxtest.Run(s.t, p, b, 0, params, s.mem, nil)
	}
}

func (s *interpSteps) Twiddle(_ context.Context, n1, n2 int, inverse bool) error {
	s.run(s.twiddle[inverse], twiddleParams, twiddleArgs(driver.DevicePtr(s.a), driver.DevicePtr(s.hi), driver.DevicePtr(s.lo), int64(n1), int64(n2), s.shift), twiddleBlocks(int64(n1)))
	return nil
}

func (s *interpSteps) Transpose(_ context.Context, rows, cols int, scale float64) error {
	if s.out == s.a { // a square split, in place (cufft's fourStepOnDevice)
		if rows != cols {
			s.t.Fatalf("a transpose of %d x %d in place", rows, cols)
		}
		s.run(s.square[scale != 1], squareParams, squareArgs(driver.DevicePtr(s.a), int64(rows), scale), transposeBlocks(int64(rows), int64(cols)))
		return nil
	}
	s.run(s.transp[scale != 1], transposeParams, transposeArgs(driver.DevicePtr(s.out), driver.DevicePtr(s.a), int64(rows), int64(cols), scale), transposeBlocks(int64(rows), int64(cols)))
	return nil
}

// newInterpSteps returns the steps over a fresh memory for a split n1 x n2, its result where
// cufft's fourStepOnDevice puts it: in place for a square split, else in a second buffer.
func newInterpSteps(t *testing.T, n1, n2 int) *interpSteps {
	progs := func(gen func(bool) string) map[bool]*ptxtest.Program {
		return map[bool]*ptxtest.Program{false: ptxtest.Parse(t, gen(false)), true: ptxtest.Parse(t, gen(true))}
	}
	hi, lo, shift := fft.TwiddleTables(n1 * n2)
	s := &interpSteps{mem: map[uint64]uint64{}, a: 1 << 40, out: 1 << 41, hi: 1 << 42, lo: 1 << 43, n: n1 * n2, shift: shift, t: t,
		twiddle: progs(func(c bool) string { return twiddlePTX("8.0", "sm_90", c) }),
		transp:  progs(func(s bool) string { return transposePTX("8.0", "sm_90", s) }),
		square:  progs(func(s bool) string { return squarePTX("8.0", "sm_90", s) })}
	if n1 == n2 {
		s.out = s.a
	}
	putPairs(s.mem, s.hi, hi)
	putPairs(s.mem, s.lo, lo)
	return s
}

// TestFourStepThroughKernels runs the whole four-step transform as the GPU runs it (the steps of
// fft.RunFourStep, the twiddle and transpose kernels interpreted with their launches' arguments
// and grids, package fft for cuFFT's sub-transforms) for splits square, oblong both ways, of
// odd and prime sides, and past a tile: the result is the direct
// transform of the line within 1e-12 of its largest magnitude, forward and inverse, scaled and
// not, and the host's four steps (fft.HostFourStep) within 1e-15.
func TestFourStepThroughKernels(t *testing.T) {
	ctx := context.Background()
	rs := rand.New(rand.NewPCG(15, 16))
	for _, sp := range [][2]int{{8, 8}, {4, 16}, {16, 4}, {7, 13}, {33, 10}, {6, 45}, {34, 34}} {
		n1, n2 := sp[0], sp[1]
		n := n1 * n2
		x := make([]complex128, n)
		for i := range x {
			x[i] = complex(rs.NormFloat64(), rs.NormFloat64())
		}
		for _, inverse := range []bool{false, true} {
			for _, scale := range []float64{1, 1 / float64(n)} {
				what := fmt.Sprintf("%d x %d inverse %v scale %v", n1, n2, inverse, scale)
				s := newInterpSteps(t, n1, n2)
				putPairs(s.mem, s.a, x)
				if err := fft.RunFourStep(ctx, s, n1, n2, inverse, scale); err != nil {
					t.Fatal(err)
				}
				got := s.pairs(s.out)
				direct := append([]complex128(nil), x...)
				if err := fft.Complex(ctx, direct, fft.Lines{Outer: 1, N: n, Inner: 1}, inverse, scale); err != nil {
					t.Fatal(err)
				}
				host := append([]complex128(nil), x...)
				if err := fft.RunFourStep(ctx, fft.HostFourStep(host, fft.CPU), n1, n2, inverse, scale); err != nil {
					t.Fatal(err)
				}
				for _, ref := range []struct {
					name string
					want []complex128
					tol  float64
				}{{"the direct transform", direct, 1e-12}, {"the host's four steps", host, 1e-15}} {
					big := 1.0
					for _, w := range ref.want {
						big = max(big, cmplx.Abs(w))
					}
					for i, w := range ref.want {
						if d := cmplx.Abs(got[i] - w); d > ref.tol*big || math.IsNaN(d) {
							t.Fatalf("%s: value %d is %v, %s %v (|diff| %.3g)", what, i, got[i], ref.name, w, d)
						}
					}
				}
			}
		}
	}
}

// TestGPUFourStepKernels runs the twiddle and transpose kernels on a GPU: the twiddles of
// matrices with more rows than the grid has blocks (70000 x 3) and more columns than a block
// has threads (3 x 70000), transposes past a tile (1000 x 1000 also in place), scaled and not,
// the half spectrum from 2e7 pairs (more than the grid's threads) and the pairs back from it
// are bit for bit the host's (Go's products, as the kernels' interpreted tests check).
func TestGPUFourStepKernels(t *testing.T) {
	d := gpu(t)
	ctx := context.Background()
	rs := rand.New(rand.NewPCG(17, 18))
	words := func(v []complex128) []float64 {
		w := make([]float64, 2*len(v))
		for i, z := range v {
			w[2*i], w[2*i+1] = real(z), imag(z)
		}
		return w
	}
	pairsOf := func(w []float64) []complex128 {
		v := make([]complex128, len(w)/2)
		for i := range v {
			v[i] = complex(w[2*i], w[2*i+1])
		}
		return v
	}
	same := func(what string, got, want []complex128) {
		t.Helper()
		for i := range want {
			if math.Float64bits(real(got[i])) != math.Float64bits(real(want[i])) || math.Float64bits(imag(got[i])) != math.Float64bits(imag(want[i])) {
				t.Fatalf("%s: value %d is %v on the GPU, %v on the host", what, i, got[i], want[i])
			}
		}
	}
	// run uploads the blocks in, runs k on the device goroutine, and downloads block out.
	run := func(in [][]complex128, outLen int, k func(p []driver.DevicePtr, out driver.DevicePtr) error) []complex128 {
		t.Helper()
		res := make([]float64, 2*outLen)
		err := d.Do(ctx, func() error {
			var ptrs []driver.DevicePtr
			defer func() {
				for _, p := range ptrs {
					d.Pool().Free(p)
				}
			}()
			for _, v := range append(in, make([]complex128, outLen)) {
				p, err := d.Pool().Alloc(uint64(16 * max(len(v), 1)))
				if err != nil {
					return err
				}
				ptrs = append(ptrs, p)
				if len(v) > 0 {
					if err := d.CopyToDevice(p, words(v)); err != nil {
						return err
					}
				}
			}
			if err := k(ptrs[:len(in)], ptrs[len(in)]); err != nil {
				return err
			}
			if err := d.Stream().Synchronize(); err != nil {
				return err
			}
			return d.CopyToHost(res, ptrs[len(in)])
		})
		if err != nil {
			t.Fatal(err)
		}
		return pairsOf(res)
	}
	for _, s := range [][2]int{{70000, 3}, {3, 70000}, {1000, 1000}} {
		n1, n2 := s[0], s[1]
		n := n1 * n2
		hi, lo, shift := fft.TwiddleTables(n)
		x := make([]complex128, n)
		for i := range x {
			x[i] = complex(rs.NormFloat64(), rs.NormFloat64())
		}
		for _, conj := range []bool{false, true} {
			want := make([]complex128, n)
			for r := range n1 {
				for c := range n2 {
					j := r * c
					w := mulGo(hi[j>>shift], lo[j&(1<<shift-1)])
					if conj {
						w = complex(real(w), -imag(w))
					}
					want[r*n2+c] = mulGo(x[r*n2+c], w)
				}
			}
			got := run([][]complex128{x, hi, lo}, n, func(p []driver.DevicePtr, out driver.DevicePtr) error {
				if err := driver.MemcpyDtoDAsync(out, p[0], uint64(16*n), d.Stream()); err != nil {
					return err
				}
				return d.TwiddleRows(out, p[1], p[2], int64(n1), int64(n2), shift, conj)
			})
			same(fmt.Sprintf("twiddles %d x %d conj %v", n1, n2, conj), got, want)
		}
		for _, scale := range []float64{1, 1 / float64(n)} {
			want := make([]complex128, n)
			for r := range n1 {
				for c := range n2 {
					v := x[r*n2+c]
					if scale != 1 {
						v = mulGo(v, complex(scale, 0))
					}
					want[c*n1+r] = v
				}
			}
			got := run([][]complex128{x}, n, func(p []driver.DevicePtr, out driver.DevicePtr) error {
				return d.TransposePairs(out, p[0], int64(n1), int64(n2), scale)
			})
			same(fmt.Sprintf("transpose %d x %d scale %v", n1, n2, scale), got, want)
			if n1 == n2 {
				got := run([][]complex128{x}, n, func(p []driver.DevicePtr, out driver.DevicePtr) error {
					if err := driver.MemcpyDtoDAsync(out, p[0], uint64(16*n), d.Stream()); err != nil {
						return err
					}
					return d.TransposeSquare(out, int64(n1), scale)
				})
				same(fmt.Sprintf("transpose in place %d x %d scale %v", n1, n2, scale), got, want)
			}
		}
	}
	// The half spectrum from a real line's pairs, past the grid-stride loop's first round.
	m := 20_000_000
	hi, lo, shift := fft.TwiddleTables(2 * m)
	z := make([]complex128, m)
	for i := range z {
		z[i] = complex(rs.NormFloat64(), rs.NormFloat64())
	}
	want := make([]complex128, m+1)
	want[0] = complex(float64(real(z[0])+imag(z[0]))*0.5, 0)
	want[m] = complex(float64(real(z[0])-imag(z[0]))*0.5, 0)
	for k := 1; k < m; k++ {
		x := postGo(z[k], z[m-k], mulGo(hi[k>>shift], lo[k&(1<<shift-1)]))
		want[k] = complex(real(x)*0.5, imag(x)*0.5)
	}
	got := run([][]complex128{z, hi, lo}, m+1, func(p []driver.DevicePtr, out driver.DevicePtr) error {
		return d.RealFromPairs(out, p[0], p[1], p[2], int64(m), shift, 0.5)
	})
	same(fmt.Sprintf("half spectrum from %d pairs", m), got, want)
	// And back: the pairs from a half spectrum of m+1 values.
	half := append(z, complex(rs.NormFloat64(), rs.NormFloat64()))
	wantY := make([]complex128, m)
	for k := range wantY {
		wantY[k] = pairGo(half[k], half[m-k], k == 0, mulGo(hi[k>>shift], lo[k&(1<<shift-1)]))
	}
	gotY := run([][]complex128{half, hi, lo}, m, func(p []driver.DevicePtr, out driver.DevicePtr) error {
		return d.PairsFromHalf(out, p[0], p[1], p[2], int64(m), shift)
	})
	same(fmt.Sprintf("%d pairs from a half spectrum", m), gotY, wantY)
}

// postGo is fft's post (X[k] from Z[k], Z[m-k] and w^k) with every operation rounded.
func postGo(zk, zm, w complex128) complex128 {
	zc := complex(real(zm), -imag(zm))
	e := complex(float64(real(zk)+real(zc)), float64(imag(zk)+imag(zc)))
	o := complex(float64(real(zk)-real(zc)), float64(imag(zk)-imag(zc)))
	wo := mulGo(w, o)
	return complex(float64(0.5*float64(real(e)+imag(wo))), float64(0.5*float64(imag(e)-real(wo))))
}

// TestRealPairsPTX interprets the kernel after a real line's four steps over a grid of two
// blocks (m from 1 to past both blocks' threads): the half spectrum is bit for bit what
// fft.RealFromPairs computes with every operation rounded (postGo, itself within 1e-15 of
// fft.RealFromPairs), scaled and not, its ends' imaginary parts +0, nothing written past its
// m+1 values.
func TestRealPairsPTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(19, 20))
	const dst, zAt, hiAt, loAt, blocks = 1 << 40, 1 << 41, 1 << 42, 1 << 43, 2
	prog := ptxtest.Parse(t, realPairsPTX("8.0", "sm_90"))
	for _, m := range []int{1, 2, 7, 64, 600} {
		hi, lo, shift := fft.TwiddleTables(2 * m)
		z := make([]complex128, m)
		for i := range z {
			z[i] = complex(rs.NormFloat64(), rs.NormFloat64())
		}
		for _, scale := range []float64{1, 0.3} {
			want := make([]complex128, m+1)
			want[0] = complex(float64(real(z[0])+imag(z[0]))*scale, 0)
			want[m] = complex(float64(real(z[0])-imag(z[0]))*scale, 0)
			for k := 1; k < m; k++ {
				x := postGo(z[k], z[m-k], mulGo(hi[k>>shift], lo[k&(1<<shift-1)]))
				want[k] = complex(real(x)*scale, imag(x)*scale)
			}
			host := fft.RealFromPairs(z, scale)
			if len(host) != m+1 {
				t.Fatalf("m %d: fft.RealFromPairs gives %d values", m, len(host))
			}
			for k, w := range want {
				if d := cmplx.Abs(host[k] - w); d > 1e-15*max(1, cmplx.Abs(w)) {
					t.Fatalf("m %d: value %d of fft.RealFromPairs is %v, the rounded steps' %v", m, k, host[k], w)
				}
			}
			mem := map[uint64]uint64{}
			putPairs(mem, zAt, z)
			putPairs(mem, hiAt, hi)
			putPairs(mem, loAt, lo)
			params := map[string]uint64{"nctaid.x": blocks}
			for i, a := range realPairsArgs(dst, zAt, hiAt, loAt, int64(m), shift, scale) {
				params[realPairsParams[i]] = a
			}
			for b := range blocks {
				ptxtest.Run(t, prog, b, 0, params, mem, nil)
			}
			what := fmt.Sprintf("half spectrum from %d pairs, scale %v", m, scale)
			samePairs(t, what, mem, dst, want)
			if _, ok := mem[dst+uint64(16*(m+1))]; ok {
				t.Fatalf("%s: wrote past its values", what)
			}
		}
	}
}

// TestRealFourStepThroughKernels runs a real line's four steps as the GPU runs them (cufft's
// realFourStepOnDevice): its value pairs a complex line of half the length through
// fft.RunFourStep with the twiddle and transpose kernels interpreted (TestFourStepThroughKernels),
// then the interpreted kernel of RealFromPairs with its launch's arguments and grid: the half
// spectrum is the real transform's (fft.Real) within 1e-12 of its largest magnitude, scaled and
// not.
func TestRealFourStepThroughKernels(t *testing.T) {
	ctx := context.Background()
	rs := rand.New(rand.NewPCG(21, 22))
	post := ptxtest.Parse(t, realPairsPTX("8.0", "sm_90"))
	for _, sp := range [][2]int{{8, 8}, {5, 12}, {33, 4}} {
		n1, n2 := sp[0], sp[1]
		m := n1 * n2
		x := make([]float64, 2*m)
		for i := range x {
			x[i] = rs.NormFloat64() + 1
		}
		for _, scale := range []float64{1, 1 / float64(2*m)} {
			what := fmt.Sprintf("real line of %d (%d x %d) scale %v", 2*m, n1, n2, scale)
			s := newInterpSteps(t, n1, n2)
			for i, v := range x { // the real line's words are its pairs' words
				s.mem[s.a+uint64(8*i)] = math.Float64bits(v)
			}
			if err := fft.RunFourStep(ctx, s, n1, n2, false, 1); err != nil {
				t.Fatal(err)
			}
			const dst, rhi, rlo = 1 << 44, 1 << 45, 1 << 46
			h2, l2, shift2 := fft.TwiddleTables(2 * m)
			putPairs(s.mem, rhi, h2)
			putPairs(s.mem, rlo, l2)
			s.run(post, realPairsParams, realPairsArgs(dst, driver.DevicePtr(s.out), rhi, rlo, int64(m), shift2, scale), gridBlocks(int64(m+1)))
			s.n = m + 1
			got := s.pairs(dst)
			want, err := fft.Real(ctx, x, fft.Lines{Outer: 1, N: 2 * m, Inner: 1}, scale)
			if err != nil {
				t.Fatal(err)
			}
			big := 1.0
			for _, w := range want {
				big = max(big, cmplx.Abs(w))
			}
			for i, w := range want {
				if d := cmplx.Abs(got[i] - w); d > 1e-12*big || math.IsNaN(d) {
					t.Fatalf("%s: value %d is %v, the real transform's %v", what, i, got[i], w)
				}
			}
		}
	}
}

// pairGo is fft's pairFromHalf with every operation rounded.
func pairGo(xk, xm complex128, first bool, w complex128) complex128 {
	if first {
		xk, xm = complex(real(xk), 0), complex(real(xm), 0)
	}
	xc := complex(real(xm), -imag(xm))
	e := complex(float64(real(xk)+real(xc)), float64(imag(xk)+imag(xc)))
	d := complex(float64(real(xk)-real(xc)), float64(imag(xk)-imag(xc)))
	wd := mulGo(complex(real(w), -imag(w)), d)
	return complex(float64(real(e)-imag(wd)), float64(imag(e)+real(wd)))
}

// TestHalfPairsPTX interprets the kernel before an inverse real line's four steps over a grid
// of two blocks (m from 1 to past both blocks' threads): its m values are bit for bit what
// fft.PairsFromHalf computes with every operation rounded (pairGo, itself within 1e-15 of
// fft.PairsFromHalf), the first element's imaginary parts ignored; nothing written past them.
func TestHalfPairsPTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(23, 24))
	const dst, xAt, hiAt, loAt, blocks = 1 << 40, 1 << 41, 1 << 42, 1 << 43, 2
	prog := ptxtest.Parse(t, halfPairsPTX("8.0", "sm_90"))
	for _, m := range []int{1, 2, 7, 64, 600} {
		hi, lo, shift := fft.TwiddleTables(2 * m)
		x := make([]complex128, m+1)
		for i := range x {
			x[i] = complex(rs.NormFloat64(), rs.NormFloat64())
		}
		want := make([]complex128, m)
		host := fft.PairsFromHalf(x)
		for k := range want {
			want[k] = pairGo(x[k], x[m-k], k == 0, mulGo(hi[k>>shift], lo[k&(1<<shift-1)]))
			if d := cmplx.Abs(host[k] - want[k]); d > 1e-15*max(1, cmplx.Abs(want[k])) {
				t.Fatalf("m %d: value %d of fft.PairsFromHalf is %v, the rounded steps' %v", m, k, host[k], want[k])
			}
		}
		mem := map[uint64]uint64{}
		putPairs(mem, xAt, x)
		putPairs(mem, hiAt, hi)
		putPairs(mem, loAt, lo)
		params := map[string]uint64{"nctaid.x": blocks}
		for i, a := range halfPairsArgs(dst, xAt, hiAt, loAt, int64(m), shift) {
			params[halfPairsParams[i]] = a
		}
		for b := range blocks {
			ptxtest.Run(t, prog, b, 0, params, mem, nil)
		}
		what := fmt.Sprintf("%d pairs from a half spectrum", m)
		samePairs(t, what, mem, dst, want)
		if _, ok := mem[dst+uint64(16*m)]; ok {
			t.Fatalf("%s: wrote past its values", what)
		}
	}
}

// TestInverseRealFourStepThroughKernels runs an inverse real line's four steps as the GPU runs
// them (cufft's inverseRealFourStepOnDevice): the interpreted kernel of PairsFromHalf with its
// launch's arguments and grid, then the inverse four steps with the twiddle and transpose
// kernels interpreted: the words are fft.InverseReal's line within 1e-12 of its largest
// magnitude.
func TestInverseRealFourStepThroughKernels(t *testing.T) {
	ctx := context.Background()
	rs := rand.New(rand.NewPCG(25, 26))
	pre := ptxtest.Parse(t, halfPairsPTX("8.0", "sm_90"))
	for _, sp := range [][2]int{{8, 8}, {5, 12}, {33, 4}} {
		n1, n2 := sp[0], sp[1]
		m := n1 * n2
		n := 2 * m
		x := make([]complex128, m+1)
		for i := range x {
			x[i] = complex(rs.NormFloat64(), rs.NormFloat64())
		}
		s := newInterpSteps(t, n1, n2)
		const xAt, rhi, rlo = 1 << 44, 1 << 45, 1 << 46
		h2, l2, shift2 := fft.TwiddleTables(n)
		putPairs(s.mem, xAt, x)
		putPairs(s.mem, rhi, h2)
		putPairs(s.mem, rlo, l2)
		s.run(pre, halfPairsParams, halfPairsArgs(driver.DevicePtr(s.a), xAt, rhi, rlo, int64(m), shift2), gridBlocks(int64(m)))
		if err := fft.RunFourStep(ctx, s, n1, n2, true, 1/float64(n)); err != nil {
			t.Fatal(err)
		}
		want, err := fft.InverseReal(ctx, x, fft.Lines{Outer: 1, N: m + 1, Inner: 1}, n, 1/float64(n))
		if err != nil {
			t.Fatal(err)
		}
		big := 1.0
		for _, w := range want {
			big = max(big, math.Abs(w))
		}
		for i, w := range want {
			got := math.Float64frombits(s.mem[s.out+uint64(8*i)])
			if d := math.Abs(got - w); d > 1e-12*big || math.IsNaN(d) {
				t.Fatalf("inverse real line of %d (%d x %d): value %d is %v, fft.InverseReal's %v", n, n1, n2, i, got, w)
			}
		}
	}
}

// TestSquareTransposePTX interprets the in-place transpose of a square split's matrix for sides
// below, at and past the 32-wide tiles (up to 3 x 3 tiles: pairs off the diagonal and on it) in
// a grid of three blocks that walk the tiles: the matrix becomes its transpose bit for bit
// (NaN, infinities, signed zeros kept), or with a scale times complex(scale, 0) as ScaleWords
// multiplies, and no word outside it is written.
func TestSquareTransposePTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(27, 28))
	const p, blocks = 1 << 40, 3
	progs := map[bool]*ptxtest.Program{false: ptxtest.Parse(t, squarePTX("8.0", "sm_90", false)), true: ptxtest.Parse(t, squarePTX("8.0", "sm_90", true))}
	for _, side := range []int{1, 5, 32, 33, 70} {
		x := make([]complex128, side*side)
		for i := range x {
			x[i] = complex(rs.NormFloat64(), rs.NormFloat64())
		}
		special := []complex128{complex(math.Copysign(0, -1), math.Inf(1)), complex(math.NaN(), -2), complex(3, math.Copysign(0, -1))}
		for i, v := range special {
			if i+1 < len(x) {
				x[len(x)-1-i] = v
			}
		}
		for _, scale := range []float64{1, 0.25, 1.0 / 3} {
			what := fmt.Sprintf("square transpose of side %d, scale %v", side, scale)
			mem := map[uint64]uint64{}
			putPairs(mem, p, x)
			want := make([]complex128, len(x))
			for r := range side {
				for c := range side {
					v := x[r*side+c]
					if scale != 1 {
						v = mulGo(v, complex(scale, 0))
					}
					want[c*side+r] = v
				}
			}
			params := map[string]uint64{"nctaid.x": blocks}
			for i, a := range squareArgs(p, int64(side), scale) {
				params[squareParams[i]] = a
			}
			for b := range blocks {
				ptxtest.Run(t, progs[scale != 1], b, 0, params, mem, nil)
			}
			samePairs(t, what, mem, p, want)
			if len(mem) != 2*len(x) {
				t.Fatalf("%s: %d words in memory, want %d", what, len(mem), 2*len(x))
			}
		}
	}
}
