package gpuarray

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestGPUFourStepAcrossChunks (issue 32 item 2): a 1-d transform of an array persisted on the
// GPU in several chunks, forced into the four steps (GPUNOTES_CUFFT_FOURSTEP=1: column
// transforms, twiddles, row transforms and a transpose on the device), gives the one cuFFT
// plan's values and the CPU's within 1e-12 of the largest magnitude, leaves its output on the
// GPU, and Path names the four steps and their split (the one-plan run does not); an inverse
// transform of it, also in four steps, reads it in place and gives the input back, and abs then
// sum of it reads it in place; the real transform in four steps (the value pairs as a complex
// line of half the length, then the half spectrum from them) gives one plan's and the CPU's
// half spectrum, and its inverse in four steps the line back. Lengths whose splits are square, oblong and of non-powers of two.
func TestGPUFourStepAcrossChunks(t *testing.T) {
	needGPU(t)
	rs := NewRandomState(44)
	for _, c := range []struct {
		n, chunk int
		split    string
		norm     string
	}{
		{1000000, 250000, "1000 x 1000", "backward"},
		{600000, 200000, "750 x 800", "ortho"},
		{1 << 19, 1 << 17, "512 x 1024", "forward"},
	} {
		px := rs.StandardNormal(Shape(c.n), Chunks(c.chunk)).Persist(OnGPU())
		if err := px.Err(); err != nil {
			t.Fatal(err)
		}
		x := hostCopy(t, px)
		what := fmt.Sprintf("fft of %d in chunks of %d, norm %s", c.n, c.chunk, c.norm)
		want, err := Fft(x, FFTNorm(c.norm)).Compute(Inline())
		if err != nil {
			t.Fatal(err)
		}
		wv, err := want.n.Values()
		if err != nil {
			t.Fatal(err)
		}
		t.Setenv("GPUNOTES_CUFFT_FOURSTEP", "0")
		one, err := Fft(px, FFTNorm(c.norm)).Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s, one plan: %v", what, err)
		}
		if strings.Contains(one.Path(), "four steps") {
			t.Fatalf("%s, one plan: path names four steps: %s", what, one.Path())
		}
		ov, err := one.n.Values()
		if err != nil {
			t.Fatal(err)
		}
		one.Release()
		t.Setenv("GPUNOTES_CUFFT_FOURSTEP", "1")
		got, err := Fft(px, FFTNorm(c.norm)).Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s, four steps: %v", what, err)
		}
		if got.Where() != "gpu 0" {
			t.Fatalf("%s: the output is not on the GPU: where %q, path %s", what, got.Where(), got.Path())
		}
		p := got.Path()
		if !strings.Contains(p, "four steps on the device ("+c.split) || !strings.Contains(p, "forced by GPUNOTES_CUFFT_FOURSTEP=1") {
			t.Fatalf("%s: path does not name the four steps %s: %s", what, c.split, p)
		}
		if strings.Contains(p, "host trip") || strings.Contains(p, "assembled on the host") || strings.Contains(p, "host fallback") {
			t.Fatalf("%s: path names a host step: %s", what, p)
		}
		gv, err := got.n.Values()
		if err != nil {
			t.Fatal(err)
		}
		closeSlices(t, what+" against the CPU", gv, wv, false, 1e-12)
		closeSlices(t, what+" against one plan", gv, ov, false, 1e-12)

		back, err := Ifft(got, FFTNorm(c.norm)).Compute(OnGPU())
		if err != nil {
			t.Fatalf("%s, then its inverse: %v", what, err)
		}
		if !strings.Contains(back.Path(), "four steps") {
			t.Fatalf("%s, then its inverse: path does not name the four steps: %s", what, back.Path())
		}
		bv, err := back.n.Values()
		if err != nil {
			t.Fatal(err)
		}
		xv, err := x.n.Values()
		if err != nil {
			t.Fatal(err)
		}
		closeSlices(t, what+", then its inverse", bv, xv, false, 1e-12)
		back.Release()

		ws, err := Fft(x, FFTNorm(c.norm)).Abs().Sum().Float64(Inline())
		if err != nil {
			t.Fatal(err)
		}
		gs, err := got.Abs().Sum().Float64(OnGPU())
		if err != nil {
			t.Fatalf("%s, then abs and sum: %v", what, err)
		}
		if math.Abs(gs-ws) > 1e-9*math.Max(math.Abs(ws), 1) {
			t.Fatalf("%s, then abs and sum: %v on the GPU, %v on the CPU", what, gs, ws)
		}
		got.Release()

		// The real transform: its value pairs as a complex line of half the length.
		t.Setenv("GPUNOTES_CUFFT_FOURSTEP", "0")
		rone, err := Rfft(px, FFTNorm(c.norm)).Compute(OnGPU())
		if err != nil {
			t.Fatalf("r%s, one plan: %v", what, err)
		}
		rov, err := rone.n.Values()
		if err != nil {
			t.Fatal(err)
		}
		rone.Release()
		t.Setenv("GPUNOTES_CUFFT_FOURSTEP", "1")
		rgot, err := Rfft(px, FFTNorm(c.norm)).Compute(OnGPU())
		if err != nil {
			t.Fatalf("r%s, four steps: %v", what, err)
		}
		if rgot.Where() != "gpu 0" || !strings.Contains(rgot.Path(), "one real line of") {
			t.Fatalf("r%s: where %q; path does not name the real four steps: %s", what, rgot.Where(), rgot.Path())
		}
		rwant, err := Rfft(x, FFTNorm(c.norm)).Compute(Inline())
		if err != nil {
			t.Fatal(err)
		}
		rwv, err := rwant.n.Values()
		if err != nil {
			t.Fatal(err)
		}
		rgv, err := rgot.n.Values()
		if err != nil {
			t.Fatal(err)
		}
		closeSlices(t, "r"+what+" against the CPU", rgv, rwv, false, 1e-12)
		closeSlices(t, "r"+what+" against one plan", rgv, rov, false, 1e-12)
		// Its inverse, also in four steps (the half spectrum to value pairs first), reads it
		// in place and gives the line back.
		rback, err := Irfft(rgot, FFTLen(c.n), FFTNorm(c.norm)).Compute(OnGPU())
		if err != nil {
			t.Fatalf("r%s, then its inverse: %v", what, err)
		}
		if !strings.Contains(rback.Path(), "the half spectrum to") {
			t.Fatalf("r%s, then its inverse: path does not name the inverse real four steps: %s", what, rback.Path())
		}
		rbv, err := rback.n.Values()
		if err != nil {
			t.Fatal(err)
		}
		closeSlices(t, "r"+what+", then its inverse", rbv, xv, false, 1e-12)
		rback.Release()
		rgot.Release()
		px.Release()
	}
}

// TestGPUTimeFourStep (GPUNOTES_FOURSTEP_BENCH=1) times, on a 1-d array of GPUNOTES_FOURSTEP_N
// float64 normals (default 1e8) persisted on the GPU in eight chunks, the transform and the real
// transform kept on the device and the transform then abs and sum, in one cuFFT plan (GPUNOTES_CUFFT_FOURSTEP=0) and
// in four steps (=1): best of 3 after a warm-up, one JSON line per row with the Path of the
// last run.
func TestGPUTimeFourStep(t *testing.T) {
	if os.Getenv("GPUNOTES_FOURSTEP_BENCH") != "1" {
		t.Skip("GPUNOTES_FOURSTEP_BENCH=1 runs it")
	}
	needGPU(t)
	n := 100000000
	if v, err := strconv.Atoi(os.Getenv("GPUNOTES_FOURSTEP_N")); err == nil {
		n = v
	}
	px := NewRandomState(1).StandardNormal(Shape(n), Chunks((n+7)/8)).Persist(OnGPU())
	if err := px.Err(); err != nil {
		t.Fatal(err)
	}
	defer px.Release()
	for _, mode := range []string{"0", "1"} {
		t.Setenv("GPUNOTES_CUFFT_FOURSTEP", mode)
		for _, row := range []struct {
			op  string
			run func() (string, error)
		}{
			{"fft", func() (string, error) {
				r, err := Fft(px).Compute(OnGPU())
				if err != nil {
					return "", err
				}
				defer r.Release()
				return r.Path(), nil
			}},
			{"rfft", func() (string, error) {
				r, err := Rfft(px).Compute(OnGPU())
				if err != nil {
					return "", err
				}
				defer r.Release()
				return r.Path(), nil
			}},
			{"sum(abs(fft))", func() (string, error) {
				r, err := Fft(px).Abs().Sum().Compute(OnGPU())
				if err != nil {
					return "", err
				}
				if _, err := r.Float64(); err != nil {
					return "", err
				}
				return r.Path(), nil
			}},
		} {
			best, path := math.Inf(1), ""
			for i := range 4 {
				t0 := time.Now()
				p, err := row.run()
				if err != nil {
					t.Fatalf("%s, GPUNOTES_CUFFT_FOURSTEP=%s: %v", row.op, mode, err)
				}
				if el := time.Since(t0).Seconds(); i > 0 && el < best {
					best, path = el, p
				}
			}
			b, _ := json.Marshal(map[string]any{"op": row.op, "n": n, "fourstep": mode, "best_ms": best * 1e3, "path": path})
			fmt.Println(string(b))
		}
	}
}
