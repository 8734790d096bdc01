package gpuarray

import (
	"context"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// workerLike runs tasks on the CPU and marks the first `fallback` of each stage as a GPU
// cluster worker marks the chunks it ran on its CPU (cluster's executeChunks).
type workerLike struct{ fallback int }

func (s workerLike) Run(ctx context.Context, tasks []*plan.Task, done func(int)) ([]*plan.Output, error) {
	outs, err := inlineScheduler{}.Run(ctx, tasks, done)
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
