package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray"
)

func init() {
	register("bench", "benchmarks: bench seed --n N --chunk C --backend cpu|gpu --scheduler inline|threads|cluster [--gpus K] [--json]", runBench)
}

func runBench(ctx context.Context, args []string) error {
	if len(args) == 0 || args[0] != "seed" {
		return fmt.Errorf("%w: gpunotes bench seed --n N --chunk C --backend cpu|gpu --scheduler inline|threads|cluster [--gpus K] [--json]", errUsage)
	}
	return benchSeed(ctx, args[1:], os.Stdout)
}

// seedResult is the JSON line of `bench seed --json` (see DESIGN.md).
type seedResult struct {
	N         int     `json:"n"`
	Chunk     int     `json:"chunk"`
	Backend   string  `json:"backend"`
	Scheduler string  `json:"scheduler"`
	GPUs      int     `json:"gpus"`
	Device    string  `json:"device"`
	Seconds   float64 `json:"seconds"`
	Sum       float64 `json:"sum"`
	Expected  float64 `json:"expected"`
	Z         float64 `json:"z"`
}

// benchSeed runs the seed experiment: (x + 1)[::2, ::2].sum() with x = Normal(10, 1) of shape
// (n, n) in (chunk, chunk) chunks, seed 42.
func benchSeed(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("bench seed", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	n := fs.Int("n", 20000, "array side")
	chunk := fs.Int("chunk", 10000, "chunk side")
	backend := fs.String("backend", "cpu", "cpu or gpu")
	sched := fs.String("scheduler", "threads", "inline, threads or cluster")
	gpus := fs.Int("gpus", 1, "GPUs to use with --backend gpu")
	threads := fs.Int("threads", 0, "goroutines for --scheduler threads (0: all cores)")
	seed := fs.Int64("seed", 42, "random seed")
	asJSON := fs.Bool("json", false, "print one JSON line")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: bench seed: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: bench seed: unexpected arguments %q", errUsage, fs.Args())
	}
	if *n <= 0 || *chunk <= 0 {
		return fmt.Errorf("%w: bench seed: --n %d and --chunk %d must be positive", errUsage, *n, *chunk)
	}
	res := seedResult{N: *n, Chunk: *chunk, Backend: *backend, Scheduler: *sched}
	var opt gpuarray.ComputeOption
	switch *backend {
	case "cpu":
		switch *sched {
		case "inline":
			opt = gpuarray.Inline()
			res.Device = cpuName(1)
		case "threads":
			opt = gpuarray.Threads(*threads)
			k := *threads
			if k <= 0 {
				k = runtime.GOMAXPROCS(0)
			}
			res.Device = cpuName(k)
		case "cluster":
			return errors.New("bench seed: --scheduler cluster is not available yet (the cluster client is not wired into bench)")
		default:
			return fmt.Errorf("%w: bench seed: unknown --scheduler %q (inline, threads, cluster)", errUsage, *sched)
		}
	case "gpu":
		if *gpus < 1 {
			return fmt.Errorf("%w: bench seed: --gpus %d must be at least 1", errUsage, *gpus)
		}
		res.GPUs = *gpus
		switch *sched {
		case "inline", "threads":
			if *gpus == 1 {
				opt = gpuarray.OnGPU(0)
			} else {
				devs := make([]int, *gpus)
				for i := range devs {
					devs[i] = i
				}
				opt = gpuarray.OnGPUs(devs...)
			}
			res.Device = fmt.Sprintf("%d GPU(s)", *gpus)
		case "cluster":
			return errors.New("bench seed: --scheduler cluster is not available yet (the cluster client is not wired into bench)")
		default:
			return fmt.Errorf("%w: bench seed: unknown --scheduler %q (inline, threads, cluster)", errUsage, *sched)
		}
	default:
		return fmt.Errorf("%w: bench seed: unknown --backend %q (cpu, gpu)", errUsage, *backend)
	}

	t0 := time.Now()
	rs := gpuarray.NewRandomState(*seed)
	x := rs.Normal(10, 1, gpuarray.Shape(*n, *n), gpuarray.Chunks(*chunk, *chunk))
	y := x.Add(1).Slice(gpuarray.Every(2), gpuarray.Every(2))
	s, err := y.Sum().Float64(opt, gpuarray.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("bench seed: %w", err)
	}
	res.Seconds = time.Since(t0).Seconds()
	kept := float64((*n + 1) / 2)
	kept *= kept
	res.Sum = s
	res.Expected = 11 * kept
	res.Z = (s - res.Expected) / math.Sqrt(kept)
	if *asJSON {
		return json.NewEncoder(w).Encode(res)
	}
	_, err = fmt.Fprintf(w, "seed experiment n=%d chunk=%d backend=%s scheduler=%s device=%q\n  %.3f s  sum=%.6f expected=%.0f z=%.3f\n",
		res.N, res.Chunk, res.Backend, res.Scheduler, res.Device, res.Seconds, res.Sum, res.Expected, res.Z)
	return err
}

// cpuName describes the CPU: its model and the number of cores used.
func cpuName(cores int) string {
	model := runtime.GOARCH
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				model = strings.TrimSpace(v)
				break
			}
		}
	}
	return fmt.Sprintf("cpu: %s, %d core(s) used", model, cores)
}
