package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// iterateResult is the JSON line of `bench iterate --json`.
type iterateResult struct {
	Bench    string  `json:"bench"`
	N        int     `json:"n"`
	Chunk    int     `json:"chunk"`
	Passes   int     `json:"passes"`
	Backend  string  `json:"backend"`
	Device   string  `json:"device"`
	Persist  float64 `json:"persist_seconds"` // computing and keeping x
	PassSecs float64 `json:"passes_seconds"`  // all passes on the kept x
	Seconds  float64 `json:"seconds"`         // both
	Value    float64 `json:"value"`           // the last pass's result, to compare with peers
}

// benchIterate runs the iterative workload of bench/RESULTS.md: x, a standard normal n x n
// array (seed 42, chunk x chunk) times 2 plus 1, persisted once; then each pass standardizes
// its columns and sums their absolute values, reading x again. bench/dask_iterate.py is the dask peer.
func benchIterate(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("bench iterate", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 8000, "array side")
	chunk := fs.Int("chunk", 2000, "chunk side")
	passes := fs.Int("passes", 10, "passes over the persisted array")
	backend := fs.String("backend", "cpu", "cpu or gpu")
	asJSON := fs.Bool("json", false, "print one JSON line")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: bench iterate: %v", errUsage, err)
	}
	if fs.NArg() > 0 || *n <= 0 || *chunk <= 0 || *passes <= 0 {
		return fmt.Errorf("%w: bench iterate: --n, --chunk and --passes must be positive, no other arguments", errUsage)
	}
	opt, device, err := benchBackend("iterate", *backend, 1)
	if err != nil {
		return err
	}
	res := iterateResult{Bench: "iterate", N: *n, Chunk: *chunk, Passes: *passes, Backend: *backend, Device: device}
	t0 := time.Now()
	x := gpuarray.NewRandomState(42).StandardNormal(gpuarray.Shape(*n, *n), gpuarray.Chunks(*chunk, *chunk)).Mul(2).Add(1).
		Persist(opt, gpuarray.WithContext(ctx))
	if err := x.Err(); err != nil {
		return fmt.Errorf("bench iterate: persist: %w", err)
	}
	defer x.Release()
	t1 := time.Now()
	for p := 0; p < *passes; p++ {
		v, err := x.Sub(x.Mean(0)).Div(x.Std(0)).Abs().Sum().Float64(opt, gpuarray.WithContext(ctx))
		if err != nil {
			return fmt.Errorf("bench iterate: pass %d: %w", p, err)
		}
		res.Value = v
	}
	res.Persist, res.PassSecs = t1.Sub(t0).Seconds(), time.Since(t1).Seconds()
	res.Seconds = res.Persist + res.PassSecs
	if *asJSON {
		enc := json.NewEncoder(w)
		return enc.Encode(res)
	}
	_, err = fmt.Fprintf(w, "iterate n=%d chunk=%d passes=%d %s: persist %.3f s, passes %.3f s, total %.3f s (value %g)\n",
		res.N, res.Chunk, res.Passes, res.Backend, res.Persist, res.PassSecs, res.Seconds, res.Value)
	return err
}
