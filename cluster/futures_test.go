package cluster_test

import (
	"context"
	"errors"
	"strings"
	"syscall"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestScatterValuesSurviveAKilledWorker scatters values over two workers, uses them as
// arguments, kills the worker holding one, and uses it again: the scheduler places it again
// from its copy.
func TestScatterValuesSurviveAKilledWorker(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	ctx := ctxT(t)
	fs, err := c.Scatter(20, 30, []float64{1, 2, 3})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Wait(fs); err != nil {
		t.Fatal(err)
	}
	v, err := c.Submit(add, fs[0], fs[1]).Result(ctx)
	if err != nil || v != 50 {
		t.Fatalf("add(scattered 20, scattered 30) = %v, %v", v, err)
	}
	s, err := fs[2].Result(ctx)
	if xs, ok := s.([]float64); err != nil || !ok || len(xs) != 3 || xs[2] != 3 {
		t.Fatalf("scattered slice came back as %#v, %v", s, err)
	}
	if err := syscall.Kill(c.WorkerPIDs()["cpu0"], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	v, err = c.Submit(add, fs[0], fs[1]).Result(ctx)
	if err != nil || v != 50 {
		t.Fatalf("after killing a worker: add = %v, %v", v, err)
	}
	if _, err := c.Scatter(fs[0]); err == nil || !strings.Contains(err.Error(), "on the cluster already") {
		t.Fatalf("scattering a future: %v", err)
	}
	if _, err := c.Scatter(func() {}); err == nil {
		t.Fatal("scattering a func must fail")
	}
}

// TestComputeFutureGoesOnWhileTheCellDoes starts an array computation on the cluster,
// checks it is pending at first and equal to the inline result when done, and cancels another.
func TestComputeFutureGoesOnWhileTheCellDoes(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 2})
	x := gpuarray.NewRandomState(4).Normal(0, 1, gpuarray.Shape(2000, 1000), gpuarray.Chunks(250, 250))
	want, err := x.Std(1).ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	f := c.Compute(x.Std(1))
	if f.Done() {
		t.Fatal("Compute returned after the computation had finished, not while it runs")
	}
	r, err := f.Result(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got, err := r.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	if !bitEqual(got, want) {
		t.Fatal("the future's array differs from the inline one")
	}
	if d, tot := f.Progress(); f.Status() != "finished" || d != tot || tot == 0 || !strings.Contains(f.HTML(), "finished") {
		t.Fatalf("status %s, progress %d/%d, HTML %s", f.Status(), d, tot, f.HTML())
	}
	big := gpuarray.NewRandomState(5).Normal(0, 1, gpuarray.Shape(20000, 20000), gpuarray.Chunks(1000, 1000)).Sum()
	g := c.Compute(big)
	g.Cancel()
	if _, err := g.Result(context.Background()); !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled computation: %v", err)
	}
	if g.Status() != "error" || !strings.Contains(g.String(), "canceled") {
		t.Fatalf("cancelled future shows %s / %s", g.Status(), g)
	}
}
