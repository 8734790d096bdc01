package gpuarray

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// tripStage is one call stage as the GPU scheduler sees it: what its library reads, and the
// host steps the scheduler names for it in Path.
type tripStage struct {
	what   string
	fn     expr.CallFn
	dt     dtype.DType // the fused values' dtype
	padded bool        // lines padded with zeros to the transform's length
	fused  bool        // the values are computed by a fused kernel (not plain host data)
	host   []string
}

// tripRecorder is a scheduler that plans as the GPU's and gives every call stage's tasks to the
// GPU scheduler's own Path step for calls (gpuSched.tripStep), then runs them on the CPU so
// that later stages see real values. It needs no GPU.
type tripRecorder struct{ stages []tripStage }

func (r *tripRecorder) plansForGPU() {}

func (r *tripRecorder) Run(ctx context.Context, tasks []*plan.Task, done func(int)) ([]*plan.Output, error) {
	kernels, groups := byKernel(tasks)
	for _, k := range kernels {
		if k.Call == nil || !k.Call.Fn.Transform() {
			continue
		}
		s := &gpuSched{}
		s.tripStep(groups[k], time.Now())
		ek := k.Elementwise()
		t0 := groups[k][0]
		r.stages = append(r.stages, tripStage{
			what:   describeKernel(k),
			fn:     k.Call.Fn,
			dt:     ek.Instrs[ek.Result].DType,
			padded: t0.Shape[k.Call.Axis] != k.Call.InLen(),
			fused:  !ek.PlainInput() && !k.PlainInput(),
			host:   s.host,
		})
	}
	return engine.Inline{}.Run(ctx, tasks, done)
}

// fftDeviceReads is what cuFFT's device runner is meant to do with fused values of dtype dt:
// true where it reads them on the device, false where it copies them to host memory and back.
// Written here from the runner's code (gpuarray/cuda/cufft), not asked of it: every transform
// reads them on the device (a generated kernel pads, widens real values, conjugates and zeroes
// the imaginary parts NumPy ignores; before, only rfft and ihfft of unpadded real lines did).
func fftDeviceReads(fn expr.CallFn, dt dtype.DType, padded bool) bool {
	return fn.Transform()
}

// TestTransformHostTripsAreNamed: every transform (the 1-d and n-d functions, float64,
// float32, complex128 and complex64 input, lines cropped, padded or whole) whose fused values
// cuFFT's device runner copies to host memory and back has that trip named in Path, with a
// reason, and the cell warned; one that reads them on the device, or reads host data plain,
// names none. Before, only "fft on cuFFT" was said: a silent host trip (issue 20). Now no
// transform makes one.
func TestTransformHostTripsAreNamed(t *testing.T) {
	rs := NewRandomState(5)
	base := rs.StandardNormal(Shape(6, 8), Chunks(3, 4))
	fns := []struct {
		name string
		f    func(*Array, ...FFTOption) *Array
	}{
		{"Fft", Fft}, {"Ifft", Ifft}, {"Rfft", Rfft}, {"Irfft", Irfft}, {"Hfft", Hfft}, {"Ihfft", Ihfft},
		{"Fftn", Fftn}, {"Ifftn", Ifftn}, {"Rfftn", Rfftn}, {"Irfftn", Irfftn},
	}
	var trips, inPlace, plain int
	for _, dt := range []DType{Float64, Float32, Complex128, Complex64} {
		x := base.AsType(dt) // planning looks at dtypes, not values
		for _, f := range fns {
			nd := strings.HasSuffix(f.name, "n")
			for _, length := range []int{0, 5, 20} {
				var opts []FFTOption
				if length > 0 {
					if nd {
						opts = append(opts, FFTLen(length, length))
					} else {
						opts = append(opts, FFTLen(length))
					}
				}
				for _, in := range []struct {
					what string
					a    *Array
				}{{"x", x}, {"2x", x.Mul(2)}} {
					what := fmt.Sprintf("%s(%s %v, FFTLen %d)", f.name, in.what, dt, length)
					r := &tripRecorder{}
					if _, err := f.f(in.a, opts...).Compute(On(r)); err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					if len(r.stages) == 0 {
						t.Fatalf("%s: no transform stage", what)
					}
					for _, st := range r.stages {
						named := len(st.host) == 1 && strings.HasPrefix(st.host[0], "host trip: ") && strings.Contains(st.host[0], st.what)
						trip := st.fused && !fftDeviceReads(st.fn, st.dt, st.padded)
						switch {
						case trip && !named:
							t.Errorf("%s: the %s (%v values, padded %v) copies them to host memory and back, but Path names %q", what, st.what, st.dt, st.padded, st.host)
						case !trip && len(st.host) > 0:
							t.Errorf("%s: the %s (%v values, padded %v, fused %v) makes no host trip, but Path names %q", what, st.what, st.dt, st.padded, st.fused, st.host)
						case trip:
							trips++
						case st.fused:
							inPlace++
						default:
							plain++
						}
					}
				}
			}
		}
	}
	if inPlace == 0 || plain == 0 {
		t.Errorf("cases of device reads %d, plain host data %d: each kind should occur", inPlace, plain)
	}
	t.Logf("call stages: %d with a named host trip, %d reading fused values on the device, %d reading host data", trips, inPlace, plain)
}
