package gpuarray

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// workerLike runs tasks on the CPU and marks the first `fallback` of each stage as a GPU
// cluster worker marks the chunks it ran on its CPU (cluster's executeChunks).
type workerLike struct{ fallback int }

func (s workerLike) Run(ctx context.Context, tasks []*plan.Task, done func(int)) ([]*plan.Output, error) {
	outs, err := engine.Inline{}.Run(ctx, tasks, done)
	if err != nil {
		return nil, err
	}
	for _, o := range outs[:min(s.fallback, len(outs))] {
		o.HostFallback, o.HostSeconds = "cuda: no GPU kernel for this", 0.25
	}
	return outs, nil
}

// TestWorkerFallbackReachesTheCell checks that chunks a scheduler's workers ran on their CPUs
// instead of their GPUs reach the cell as one warning line per stage (chunks, time, reason)
// and Path, and that a computation without any leaves Path empty.
func TestWorkerFallbackReachesTheCell(t *testing.T) {
	x := NewRandomState(3).StandardNormal(Shape(40, 30), Chunks(10, 10))
	want, err := x.Mean(0).ToSlice(Inline())
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stderr := os.Stderr
	os.Stderr = w
	c, err := x.Mean(0).Compute(On(workerLike{fallback: 3}))
	os.Stderr = stderr
	w.Close()
	warned, _ := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	line := "host fallback: 3 of 12 chunks of the mean over axes [0] of shape (40, 30) ran on the CPU of GPU cluster workers in 0.75 s (cuda: no GPU kernel for this)"
	if got := strings.TrimSpace(string(warned)); got != "gpuarray warning: "+line {
		t.Fatalf("warning %q, want %q", got, "gpuarray warning: "+line)
	}
	if c.Path() != line {
		t.Fatalf("Path %q, want %q", c.Path(), line)
	}
	got, err := c.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("mean[%d] %v, want %v", i, got[i], want[i])
		}
	}
	c, err = x.Mean(0).Compute(On(workerLike{}))
	if err != nil || c.Path() != "" {
		t.Fatalf("no fallback: %v, Path %q", err, c.Path())
	}
}

// TestWorkerFallbackReachesPersistedPath checks that a persisted array's Path names the host
// fallbacks of the stages computed on the way (a reduction, then what reads it), as Compute's
// does, and stays empty without any.
func TestWorkerFallbackReachesPersistedPath(t *testing.T) {
	x := NewRandomState(3).StandardNormal(Shape(40, 30), Chunks(10, 10))
	line := "host fallback: 3 of 12 chunks of the mean over axes [0] of shape (40, 30) ran on the CPU of GPU cluster workers in 0.75 s (cuda: no GPU kernel for this)"
	stderr := os.Stderr
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		t.Fatal(err)
	}
	defer devnull.Close()
	os.Stderr = devnull
	defer func() { os.Stderr = stderr }()
	for name, a := range map[string]*Array{"the reduction": x.Mean(0), "a stage reading it": x.Mean(0).Add(1)} {
		p := a.Persist(On(workerLike{fallback: 3}))
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(p.Path(), line) {
			t.Errorf("%s: Path %q does not name the fallback %q", name, p.Path(), line)
		}
		if p := a.Persist(On(workerLike{})); p.Err() != nil || p.Path() != "" {
			t.Errorf("%s without a fallback: %v, Path %q", name, p.Err(), p.Path())
		}
	}
}
