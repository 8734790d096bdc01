package fft

import (
	"context"
	"math"
	"runtime"
	"sync"

	"gonum.org/v1/gonum/dsp/fourier"

	"github.com/gpunotes/gpunotes/internal/parallel"
)

// One long line (rfft of 2^22 values, issue 17's row) ran on one core through gonum. A
// transform of length m = m1*m2 is split here into short transforms that run on all cores
// (Bailey's four-step): m2 transforms of length m1 down the columns of the m1 x m2 matrix
// of the input, a twiddle per element, m1 transforms of length m2 along the rows, the result
// read transposed. The short transforms run in cache (newShort); columns and rows move four at
// a time, so each cache line read or written is used whole.

// minSplit is the shortest line split in four steps: below it gonum's single transform is
// fast enough, and a line's two passes over memory cost more than they save.
const minSplit = 1 << 15

// group is how many columns (rows) move together: four complex128 values fill a 64-byte line.
const group = 4

// split returns m1*m2 = m with m1 the divisor of m nearest below sqrt(m), and whether both are
// long enough (16 or more) to split.
func split(m int) (m1, m2 int, ok bool) {
	for d := int(math.Sqrt(float64(m))); d >= 16; d-- {
		if m%d == 0 {
			return d, m / d, m/d >= 16
		}
	}
	return 0, 0, false
}

// splits reports whether lines of length n (complex) should be split: few lines (fewer than
// the cores, so ForEach over lines leaves cores idle), long, and of a length that splits.
func splits(l Lines, n int) bool {
	if n < minSplit || l.Count() >= runtime.GOMAXPROCS(0) || runtime.GOMAXPROCS(0) < 2 {
		return false
	}
	_, _, ok := split(n)
	return ok
}

// twiddles holds exp(-2πi j/n) for j in [0, n] as the product of two short tables (j =
// a<<shift + b): two table reads and a complex product per value, within a few ulps of the
// direct sine and cosine.
type twiddles struct {
	n, shift int
	mask     int
	hi, lo   []complex128
}

var twiddleCache sync.Map // n -> *twiddles

func twiddlesOf(n int) *twiddles {
	if t, ok := twiddleCache.Load(n); ok {
		return t.(*twiddles)
	}
	shift := 0
	for 1<<(2*shift) < n {
		shift++
	}
	t := &twiddles{n: n, shift: shift, mask: 1<<shift - 1}
	t.lo = make([]complex128, 1<<shift)
	for b := range t.lo {
		t.lo[b] = unitRoot(b, n)
	}
	t.hi = make([]complex128, (n>>shift)+1)
	for a := range t.hi {
		t.hi[a] = unitRoot(a<<shift, n)
	}
	v, _ := twiddleCache.LoadOrStore(n, t)
	return v.(*twiddles)
}

// unitRoot is exp(-2πi j/n); the quarter turns (1, -i, -1, i) come out exact.
func unitRoot(j, n int) complex128 {
	j %= n
	if 4*j%n == 0 {
		switch 4 * j / n {
		case 0:
			return 1
		case 1:
			return -1i
		case 2:
			return -1
		}
		return 1i
	}
	s, c := math.Sincos(-2 * math.Pi * float64(j) / float64(n))
	return complex(c, s)
}

// at returns exp(-2πi j/n) for j in [0, n].
func (t *twiddles) at(j int) complex128 {
	return t.hi[j>>t.shift] * t.lo[j&t.mask]
}

// short transforms lines of one length in cache: the Stockham radix-2 transform for powers
// of two (3.5x gonum's at 1024 and 2048), gonum's for other lengths.
type short interface {
	transform(x []complex128, inverse bool)
}

type gonumShort struct{ t *fourier.CmplxFFT }

func (g gonumShort) transform(x []complex128, inverse bool) {
	if inverse {
		g.t.Sequence(x, x)
	} else {
		g.t.Coefficients(x, x)
	}
}

func newShort(n int) short {
	if isPow2(n) {
		return newStockham(n)
	}
	return gonumShort{fourier.NewCmplxFFT(n)}
}

// columns reads the columns n2 .. n2+len(bufs)-1 of the m1 x m2 matrix of a line into bufs.
type columns func(bufs [][]complex128, n2, m2 int)

// complexColumns reads the columns of a complex line.
func complexColumns(x []complex128) columns {
	return func(bufs [][]complex128, n2, m2 int) {
		for n1 := range bufs[0] {
			row := x[n1*m2+n2 : n1*m2+n2+len(bufs)]
			for c, v := range row {
				bufs[c][n1] = v
			}
		}
	}
}

// pairColumns reads the columns of the complex line x[2j] + i x[2j+1] of a real line x.
func pairColumns(x []float64) columns {
	return func(bufs [][]complex128, n2, m2 int) {
		for n1 := range bufs[0] {
			i := 2 * (n1*m2 + n2)
			row := x[i : i+2*len(bufs)]
			for c := range bufs {
				bufs[c][n1] = complex(row[2*c], row[2*c+1])
			}
		}
	}
}

var scratchPool sync.Pool // *[]complex128, the first pass's matrix

// fourStep transforms a line of length m = m1*m2, whose columns read reads, into out (length
// m), forward or inverse (unnormalized), on all cores.
func fourStep(ctx context.Context, m int, read columns, out []complex128, inverse bool) error {
	m1, m2, _ := split(m)
	tw := twiddlesOf(m)
	sp, _ := scratchPool.Get().(*[]complex128)
	if sp == nil || cap(*sp) < m {
		sp = new([]complex128)
		*sp = make([]complex128, m)
	}
	defer scratchPool.Put(sp)
	scratch := (*sp)[:m] // the m1 x m2 matrix of the first pass's results, row-major
	// Pass 1: the columns n2 (stride m2), a group at a time; result (k1, n2) twiddled by
	// w^(n2*k1) into scratch[k1*m2 + n2].
	groups := (m2 + group - 1) / group
	err := parallel.ForEach(ctx, groups, func() func(int) {
		t := newShort(m1)
		bufs := make([][]complex128, group)
		for c := range bufs {
			bufs[c] = make([]complex128, m1)
		}
		return func(g int) {
			n2 := g * group
			w := min(group, m2-n2)
			read(bufs[:w], n2, m2)
			for c := 0; c < w; c++ {
				b := bufs[c]
				t.transform(b, inverse)
				col := n2 + c
				for k1, v := range b {
					f := tw.at(col * k1)
					if inverse {
						f = complex(real(f), -imag(f))
					}
					scratch[k1*m2+col] = v * f
				}
			}
		}
	})
	if err != nil {
		return err
	}
	// Pass 2: the rows k1 (contiguous), a group at a time, transformed in place; element k2 of
	// row k1 is out[k1 + m1*k2].
	groups = (m1 + group - 1) / group
	return parallel.ForEach(ctx, groups, func() func(int) {
		t := newShort(m2)
		return func(g int) {
			k1 := g * group
			w := min(group, m1-k1)
			for c := 0; c < w; c++ {
				t.transform(scratch[(k1+c)*m2:(k1+c+1)*m2], inverse)
			}
			for k2 := 0; k2 < m2; k2++ {
				o := out[k1+m1*k2 : k1+m1*k2+w]
				for c := range o {
					o[c] = scratch[(k1+c)*m2+k2]
				}
			}
		}
	})
}

// complexSplit transforms one line of length n (contiguous) in place in four steps, every
// result multiplied by scale.
func complexSplit(ctx context.Context, x []complex128, inverse bool, scale float64) error {
	// The first pass reads all of x before the second writes: the result goes to x itself.
	if err := fourStep(ctx, len(x), complexColumns(x), x, inverse); err != nil {
		return err
	}
	if scale == 1 {
		return nil
	}
	c := complex(scale, 0)
	return parallel.ForEach(ctx, chunksOf(len(x)), func() func(int) {
		return func(k int) {
			lo, hi := chunkRange(k, len(x))
			for i := lo; i < hi; i++ {
				x[i] *= c
			}
		}
	})
}

// realSplit returns the half spectrum (n/2+1 coefficients) of the real line x of even length
// n, every coefficient multiplied by scale: the complex transform Z of the m = n/2 values
// x[2j] + i x[2j+1] in four steps, then X[k] = (Z[k] + conj Z[m-k])/2 - i/2 w^k (Z[k] - conj
// Z[m-k]) with w = exp(-2πi/n), pairs (k, m-k) in place.
func realSplit(ctx context.Context, x []float64, scale float64) ([]complex128, error) {
	n := len(x)
	m := n / 2
	out := make([]complex128, m+1)
	if err := fourStep(ctx, m, pairColumns(x), out[:m], false); err != nil {
		return nil, err
	}
	tw := twiddlesOf(n)
	z0 := out[0]
	out[0] = complex((real(z0)+imag(z0))*scale, 0)
	out[m] = complex((real(z0)-imag(z0))*scale, 0)
	half := m / 2 // pairs (k, m-k) for 1 <= k <= half; k == m-k at k == half for even m
	err := parallel.ForEach(ctx, chunksOf(half), func() func(int) {
		return func(c int) {
			lo, hi := chunkRange(c, half)
			for k := lo + 1; k <= hi; k++ {
				zk, zm := out[k], out[m-k]
				xk := post(zk, zm, tw.at(k))
				xm := post(zm, zk, tw.at(m-k))
				out[k] = complex(real(xk)*scale, imag(xk)*scale)
				out[m-k] = complex(real(xm)*scale, imag(xm)*scale)
			}
		}
	})
	return out, err
}

// inverseRealSplit returns the real line of even length n whose half spectrum is x (n/2+1
// coefficients; the imaginary parts of the first and last ignored, as NumPy's irfft),
// unnormalized and multiplied by scale: realSplit backwards. Y[k] = (X[k] + conj X[m-k]) +
// i conj(w^k) (X[k] - conj X[m-k]) is twice the transform of the pairs x[2j] + i x[2j+1]
// (m = n/2), whose inverse in four steps gives them.
func inverseRealSplit(ctx context.Context, x []complex128, n int, scale float64) ([]float64, error) {
	m := n / 2
	tw := twiddlesOf(n)
	y := make([]complex128, m)
	err := parallel.ForEach(ctx, chunksOf(m), func() func(int) {
		return func(c int) {
			lo, hi := chunkRange(c, m)
			for k := lo; k < hi; k++ {
				xk, xm := x[k], x[m-k]
				if k == 0 {
					xk, xm = complex(real(xk), 0), complex(real(xm), 0)
				}
				xc := complex(real(xm), -imag(xm))
				e, d := xk+xc, xk-xc
				w := tw.at(k)
				wd := complex(real(w), -imag(w)) * d
				y[k] = complex(real(e)-imag(wd), imag(e)+real(wd)) // e + i*wd
			}
		}
	})
	if err != nil {
		return nil, err
	}
	if err := fourStep(ctx, m, complexColumns(y), y, true); err != nil {
		return nil, err
	}
	out := make([]float64, n)
	err = parallel.ForEach(ctx, chunksOf(m), func() func(int) {
		return func(c int) {
			lo, hi := chunkRange(c, m)
			for j := lo; j < hi; j++ {
				out[2*j], out[2*j+1] = real(y[j])*scale, imag(y[j])*scale
			}
		}
	})
	return out, err
}

// post is X[k] from Z[k], Z[m-k] and w^k.
func post(zk, zm, w complex128) complex128 {
	zc := complex(real(zm), -imag(zm))
	e := zk + zc // 2 * the transform of the even values
	o := zk - zc // 2i * the transform of the odd values
	// X = e/2 - i/2 * w * o
	wo := w * o
	return complex(0.5*(real(e)+imag(wo)), 0.5*(imag(e)-real(wo)))
}

// chunksOf is how many ranges an elementwise pass over n values is cut into.
func chunksOf(n int) int { return max(1, min(64, n/4096)) }

// chunkRange is range k of chunksOf(n) over [0, n).
func chunkRange(k, n int) (int, int) {
	c := chunksOf(n)
	return k * n / c, (k + 1) * n / c
}
