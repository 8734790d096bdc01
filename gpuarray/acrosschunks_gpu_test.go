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

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestGPUCallsAcrossChunks: sorts, argsorts, top-k and transforms whose axis spans several
// chunks of an array persisted on the GPU (a 1-d array of 1e6 in four chunks, a 2-d one along
// its chunked axis) run on the device: the chunks are joined there, the output stays there
// (Where is the GPU, Path names no host step), bit-equal to the CPU for the sorts and within
// 1e-12 of the largest magnitude for the transforms; a chained stage (abs, then a sum) reads
// the kept output in place and gives the CPU's sum.
func TestGPUCallsAcrossChunks(t *testing.T) {
	needGPU(t)
	rs := NewRandomState(32)
	for _, in := range []struct {
		x    *Array
		axis int
	}{
		{rs.StandardNormal(Shape(1000000), Chunks(250000)), 0},
		{rs.StandardNormal(Shape(600, 300), Chunks(150, 100)), 0},
	} {
		px := in.x.Persist(OnGPU())
		if err := px.Err(); err != nil {
			t.Fatal(err)
		}
		x := hostCopy(t, px)
		cpu, gpu := acrossChunksCalls(x, in.axis), acrossChunksCalls(px, in.axis)
		for i := range cpu {
			what := fmt.Sprintf("%s of %s along %d", cpu[i].name, expr.ShapeString(x.n.Shape), in.axis)
			exact := !strings.Contains(cpu[i].name, "fft")
			want, err := cpu[i].r.Compute(Inline())
			if err != nil {
				t.Fatalf("%s on the CPU: %v", what, err)
			}
			got, err := gpu[i].r.Compute(OnGPU())
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if got.Where() != "gpu 0" {
				t.Fatalf("%s: the output is not on the GPU: where %q, path %s", what, got.Where(), got.Path())
			}
			if p := got.Path(); strings.Contains(p, "assembled on the host") || strings.Contains(p, "main memory") || strings.Contains(p, "host read") || strings.Contains(p, "host trip") {
				t.Fatalf("%s: path names a host step: %s", what, p)
			}
			wv, err := want.n.Values()
			if err != nil {
				t.Fatal(err)
			}
			gv, err := got.n.Values()
			if err != nil {
				t.Fatal(err)
			}
			closeSlices(t, what, gv, wv, exact, 1e-12)
			got.Release()
			ws, err := cpu[i].r.Abs().Sum().Float64(Inline())
			if err != nil {
				t.Fatal(err)
			}
			gs, err := gpu[i].r.Abs().Sum().Compute(OnGPU())
			if err != nil {
				t.Fatalf("%s, then abs and sum: %v", what, err)
			}
			if p := gs.Path(); strings.Contains(p, "host read") || strings.Contains(p, "host trip") || strings.Contains(p, "host fallback") || strings.Contains(p, "assembled on the host") {
				t.Fatalf("%s, then abs and sum: path names a host step: %s", what, p)
			}
			s, err := gs.Float64()
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(s-ws) > 1e-9*math.Max(math.Abs(ws), 1) {
				t.Fatalf("%s, then abs and sum: %v on the GPU, %v on the CPU", what, s, ws)
			}
		}
		px.Release()
	}
}

// TestGPUTimeCallsAcrossChunks (GPUNOTES_ACROSS_BENCH=1) times, on a 1-d array of
// GPUNOTES_ACROSS_N float64 normals (default 1e8) persisted on the GPU in eight chunks, sort
// and argsort (results left on the device) and fft then abs and sum (one number back), as
// bench/cupy_ops.py's resident peer does on the same length: best of 3 after a warm-up, one
// JSON line per row with the Path of the last run.
func TestGPUTimeCallsAcrossChunks(t *testing.T) {
	if os.Getenv("GPUNOTES_ACROSS_BENCH") != "1" {
		t.Skip("GPUNOTES_ACROSS_BENCH=1 runs it")
	}
	needGPU(t)
	n := 100000000
	if v, err := strconv.Atoi(os.Getenv("GPUNOTES_ACROSS_N")); err == nil {
		n = v
	}
	px := NewRandomState(1).StandardNormal(Shape(n), Chunks((n+7)/8)).Persist(OnGPU())
	if err := px.Err(); err != nil {
		t.Fatal(err)
	}
	defer px.Release()
	rows := []struct {
		op  string
		run func() (string, error)
	}{
		{"sort", func() (string, error) {
			r, err := Sort(px, 0).Compute(OnGPU())
			if err != nil {
				return "", err
			}
			defer r.Release()
			return r.Path(), nil
		}},
		{"argsort", func() (string, error) {
			r, err := Argsort(px, 0).Compute(OnGPU())
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
	}
	for _, r := range rows {
		best := math.Inf(1)
		var path string
		for i := range 4 {
			t0 := time.Now()
			p, err := r.run()
			if err != nil {
				t.Fatalf("%s: %v", r.op, err)
			}
			if s := time.Since(t0).Seconds(); i > 0 {
				best = math.Min(best, s)
			}
			path = p
		}
		line, _ := json.Marshal(map[string]any{"peer": "gpunotes-persisted", "op": r.op, "n": n, "chunks": 8, "best_s": best, "path": path})
		fmt.Println(string(line))
	}
}
