package gpuarray

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestGPUSelectionAfterRelease repeats what `bench ops --persisted` does with a selection (the
// stall of bench/RESULTS.md, issue 32): the selection of an array persisted on the GPU is
// computed on the device, read back, released, and computed again, three times, with the same
// length each time. Each computation has its own deadline, so a stalled one fails the test
// instead of hanging it. GPUNOTES_GPU_RELEASE_N sets the array's side (default 4000, chunks of a
// quarter of it; the bench stalled at 20000), GPUNOTES_GPU_RELEASE_WAIT the deadline in seconds
// (default 60). A computation that outlives its deadline less a second writes every
// goroutine's stack, to find where it waits, into GPUNOTES_GPU_RELEASE_DUMP (a folder) or the
// test's log.
func TestGPUSelectionAfterRelease(t *testing.T) {
	needGPU(t)
	compactMasks(t)
	n := 4000
	if v, err := strconv.Atoi(os.Getenv("GPUNOTES_GPU_RELEASE_N")); err == nil && v >= 4 {
		n = v
	}
	x := NewRandomState(42).StandardNormal(Shape(n, n), Chunks(n/4, n/4)).Persist(OnGPU())
	if err := x.Err(); err != nil {
		t.Fatal(err)
	}
	defer x.Release()
	wait := 60 * time.Second
	if v, err := strconv.Atoi(os.Getenv("GPUNOTES_GPU_RELEASE_WAIT")); err == nil && v >= 2 {
		wait = time.Duration(v) * time.Second
	}
	for _, c := range []struct {
		name string
		f    func(x *Array) *Array
	}{
		{"nonzero(x > 1)[0]", func(x *Array) *Array { return Nonzero(x.Gt(1))[0] }},
		{"argwhere(x > 2)", func(x *Array) *Array { return Argwhere(x.Gt(2)) }},
		{"unique values", func(x *Array) *Array { return UniqueValues(x.Mul(10).Round().AsType(Int32)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			length := -1
			for rep := range 3 {
				ctx, cancel := context.WithTimeout(context.Background(), wait)
				t0 := time.Now()
				stopProf := profileComputation(t, c.name, rep+1)
				dump := time.AfterFunc(wait-time.Second, func() { dumpStacks(t, c.name, rep+1); stopProf() })
				got, err := c.f(x).Compute(OnGPU(), WithContext(ctx))
				if err != nil {
					dump.Stop()
					stopProf()
					cancel()
					t.Fatalf("computation %d: %v", rep+1, err)
				}
				vals, err := got.ToSlice()
				dump.Stop()
				stopProf()
				cancel()
				if err != nil {
					t.Fatalf("computation %d: read back: %v", rep+1, err)
				}
				k := len(vals)
				got.Release()
				t.Logf("computation %d: %d selected in %.3f s: %s", rep+1, k, time.Since(t0).Seconds(), got.Path())
				if length >= 0 && k != length {
					t.Fatalf("computation %d selected %d, the first %d", rep+1, k, length)
				}
				length = k
			}
			if length <= 0 {
				t.Fatalf("nothing selected from %d normals", n*n)
			}
		})
	}
}

// profileComputation profiles the CPU during computation rep of name into
// GPUNOTES_GPU_RELEASE_DUMP (a folder), where planning spends its time; the function it returns
// stops it (once; later calls do nothing). Without the folder it does nothing.
func profileComputation(t *testing.T, name string, rep int) func() {
	dir := os.Getenv("GPUNOTES_GPU_RELEASE_DUMP")
	if dir == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(dir, releaseFileName(name)+"-"+strconv.Itoa(rep)+".prof"))
	if err != nil {
		t.Logf("profile: %v", err)
		return func() {}
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		t.Logf("profile: %v", err)
		return func() {}
	}
	var once sync.Once
	return func() {
		once.Do(func() {
			pprof.StopCPUProfile()
			f.Close()
		})
	}
}

// releaseFileName is name as a file name.
func releaseFileName(name string) string {
	return strings.NewReplacer(" ", "_", "(", "", ")", "", ">", "", "[", "", "]", "").Replace(name)
}

// dumpStacks writes every goroutine's stack (a computation that outlived its deadline) into
// GPUNOTES_GPU_RELEASE_DUMP or the test's log.
func dumpStacks(t *testing.T, name string, rep int) {
	buf := make([]byte, 1<<22)
	buf = buf[:runtime.Stack(buf, true)]
	if dir := os.Getenv("GPUNOTES_GPU_RELEASE_DUMP"); dir != "" {
		f := filepath.Join(dir, releaseFileName(name)+"-"+strconv.Itoa(rep)+".stacks")
		if err := os.WriteFile(f, buf, 0o644); err == nil {
			t.Logf("computation %d still running near its deadline: stacks in %s", rep, f)
			return
		}
	}
	t.Logf("computation %d still running near its deadline; stacks:\n%s", rep, buf[:min(len(buf), 20000)])
}
