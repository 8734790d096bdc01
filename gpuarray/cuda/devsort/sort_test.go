package devsort_test

import (
	"bytes"
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/devsort"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/fft"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// gpu opens GPU 0 or skips; GPUNOTES_GPU_TESTS=1 turns a missing GPU into a failure.
func gpu(t *testing.T) *cuda.Device {
	t.Helper()
	d, err := cuda.Open(0)
	if err != nil {
		if os.Getenv("GPUNOTES_GPU_TESTS") == "1" {
			t.Fatalf("GPU tests required: %v", err)
		}
		t.Skipf("no GPU: %v", err)
	}
	return d
}

// values returns n values of dt with many ties, and for floats NaNs of both signs and
// payloads, zeros of both signs and infinities.
func values(r *rand.Rand, dt dtype.DType, n int) dtype.Slice {
	f := make([]float64, n)
	spread := []float64{3, 200, 1e9}[r.IntN(3)]
	for i := range f {
		f[i] = math.Round(r.NormFloat64() * spread)
		if dt.IsFloat() {
			switch r.IntN(16) {
			case 0:
				f[i] = math.NaN()
			case 1:
				f[i] = math.Float64frombits(0xfff8000000000123) // a negative NaN with a payload
			case 2:
				f[i] = math.Copysign(0, -1)
			case 3:
				f[i] = math.Inf(1 - 2*r.IntN(2))
			case 4, 5, 6:
				f[i] = r.NormFloat64()
			}
		}
	}
	if dt == dtype.Float32 {
		s := make([]float32, n)
		for i, v := range f {
			s[i] = float32(v)
			if math.Float64bits(v) == 0xfff8000000000123 {
				s[i] = math.Float32frombits(0xffc00123)
			}
		}
		return must(dtype.Of(s))
	}
	if dt == dtype.Float64 {
		return dtype.OfFloat64(f)
	}
	if dt == dtype.Bool {
		b := make([]bool, n)
		for i := range b {
			b[i] = r.IntN(2) == 0
		}
		return dtype.OfBool(b)
	}
	out := dtype.Make(dt, n)
	bits := out.Bytes()
	sz := dt.Size()
	for i, v := range f { // wrap into the type's range through its low bytes
		u := uint64(int64(v))
		for k := 0; k < sz; k++ {
			bits[i*sz+k] = byte(u >> (8 * k))
		}
	}
	return out
}

func must(s dtype.Slice, err error) dtype.Slice {
	if err != nil {
		panic(err)
	}
	return s
}

var dtypes = []dtype.DType{dtype.Float64, dtype.Float32, dtype.Int64, dtype.Int32, dtype.Int16, dtype.Int8,
	dtype.Uint64, dtype.Uint32, dtype.Uint16, dtype.Uint8, dtype.Bool}

var fns = []expr.CallFn{expr.FnSort, expr.FnSortDesc, expr.FnArgsort, expr.FnArgsortDesc}

// TestGPUSortMatchesCPU sorts random blocks of every dtype along every axis on the GPU and
// compares the bytes with the CPU sort's (itself checked against NumPy in package gpuarray).
func TestGPUSortMatchesCPU(t *testing.T) {
	d := gpu(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(17, 4))
	shapes := [][]int{{1}, {7}, {2048}, {2049}, {100003}, {1 << 20}, {3, 5}, {64, 100}, {100, 64}, {5, 4, 9}, {3, 700, 2}, {70000, 3}, {2, 3000, 40}, {2048, 5}, {1000, 300}}
	for _, shape := range shapes {
		for axis := range shape {
			for _, dt := range dtypes {
				n := 1
				for _, s := range shape {
					n *= s
				}
				vals := values(r, dt, n)
				m := shape[axis]
				for i, fn := range append(fns, fns...) {
					odt := dt
					if fn == expr.FnArgsort || fn == expr.FnArgsortDesc {
						odt = dtype.Int64
					}
					c := &plan.CallStep{Call: expr.Call{Fn: fn, Axis: axis, N: m}, DType: odt}
					if i >= len(fns) { // the positions a quantile or TopK keeps
						c.Keep = []int{m / 2, m - 1, 0, m / 2}
					}
					what := fmt.Sprintf("%v (keep %v) of %v %v along axis %d", fn, c.Keep, dt, shape, axis)
					want, _, err := cpu.ApplyCall(ctx, fft.CPU, c, vals.Clone(), shape)
					if err != nil {
						t.Fatalf("%s on the CPU: %v", what, err)
					}
					got, gshape, err := devsort.Sort(ctx, d, c, vals, shape)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					if wshape := c.OutShape(shape); fmt.Sprint(gshape) != fmt.Sprint(wshape) || got.DType() != want.DType() {
						t.Fatalf("%s: shape %v dtype %v, want %v %v", what, gshape, got.DType(), wshape, want.DType())
					}
					if !bytes.Equal(got.Bytes(), want.Bytes()) {
						for i := 0; i < want.Len(); i++ {
							if !bytes.Equal(got.Slice(i, i+1).Bytes(), want.Slice(i, i+1).Bytes()) {
								t.Fatalf("%s: element %d is %v on the GPU, %v on the CPU", what, i, got.Slice(i, i+1).Any(), want.Slice(i, i+1).Any())
							}
						}
					}
				}
			}
		}
	}
}

// TestGPUSortSplitsWhenTooBig sorts blocks whose passes' buffers do not fit the pool (a limit
// set by the test) in groups of outer slabs, bytes equal to the CPU's; a block of one slab too
// big is refused with an error that names the sizes.
func TestGPUSortSplitsWhenTooBig(t *testing.T) {
	d := gpu(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(5, 6))
	for _, tc := range []struct {
		shape []int
		axis  int
		limit uint64
	}{{[]int{50, 3000, 2}, 1, 1 << 20}, {[]int{3000, 40}, 1, 64 << 10}, {[]int{7, 100003}, 1, 6 << 20}} {
		for _, dt := range []dtype.DType{dtype.Float64, dtype.Int32} {
			n := 1
			for _, s := range tc.shape {
				n *= s
			}
			vals := values(r, dt, n)
			for _, fn := range fns {
				odt := dt
				if fn == expr.FnArgsort || fn == expr.FnArgsortDesc {
					odt = dtype.Int64
				}
				c := &plan.CallStep{Call: expr.Call{Fn: fn, Axis: tc.axis, N: tc.shape[tc.axis]}, DType: odt}
				what := fmt.Sprintf("%v of %v %v along axis %d in %d bytes", fn, dt, tc.shape, tc.axis, tc.limit)
				want, _, err := cpu.ApplyCall(ctx, fft.CPU, c, vals.Clone(), tc.shape)
				if err != nil {
					t.Fatalf("%s on the CPU: %v", what, err)
				}
				restore := devsort.SetScratchLimit(tc.limit)
				got, _, err := devsort.Sort(ctx, d, c, vals, tc.shape)
				restore()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if !bytes.Equal(got.Bytes(), want.Bytes()) {
					t.Fatalf("%s: the bytes differ from the CPU's", what)
				}
			}
		}
	}
	restore := devsort.SetScratchLimit(1 << 20)
	defer restore()
	c := &plan.CallStep{Call: expr.Call{Fn: expr.FnSort, Axis: 0, N: 100003}, DType: dtype.Float64}
	_, _, err := devsort.Sort(ctx, d, c, values(r, dtype.Float64, 100003), []int{100003})
	if err == nil || !strings.Contains(err.Error(), "needs") || !strings.Contains(err.Error(), "1.0 MiB is free") {
		t.Fatalf("a line too big for the pool: error %v, want one naming the memory needed and free", err)
	}
}
