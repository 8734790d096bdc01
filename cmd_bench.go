package main

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

func init() {
	register("bench", "benchmarks: "+benchUsage, runBench)
}

const benchUsage = "bench seed --n N --chunk C --backend cpu|gpu --scheduler inline|threads|cluster [--gpus K] [--json] | bench ops --backend cpu|gpu [--gpus K] [--n N] [--chunk C] [--op OP] [--persist] [--json] | bench iterate --backend cpu|gpu [--n N] [--chunk C] [--passes P] [--json] | bench read PATH.npy|STORE.zarr|DATA.parquet [--chunks R,C] [--threads N] [--json] | bench frame --task groupby --rows N [--k K] [--partitions P] --backend cpu|gpu [--json]"

func runBench(ctx context.Context, args []string) error {
	if len(args) > 0 && args[0] == "seed" {
		return benchSeed(ctx, args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "ops" {
		return benchOps(ctx, args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "iterate" {
		return benchIterate(ctx, args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "read" {
		return benchRead(ctx, args[1:], os.Stdout)
	}
	if len(args) > 0 && args[0] == "frame" {
		return benchFrame(ctx, args[1:], os.Stdout)
	}
	return fmt.Errorf("%w: gpunotes %s", errUsage, benchUsage)
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
	// Warmup is the untimed first run (contexts, kernel linking); ClusterStart the time until
	// every worker was ready. Neither is part of Seconds.
	Warmup       float64 `json:"warmup_seconds,omitempty"`
	ClusterStart float64 `json:"cluster_start_seconds,omitempty"`
}

// startBenchCluster starts a local cluster and records how long it took to be ready.
func startBenchCluster(ctx context.Context, o cluster.Options, res *seedResult) (*cluster.LocalCUDA, error) {
	t := time.Now()
	c, err := cluster.NewLocalCUDA(o)
	if err != nil {
		return nil, fmt.Errorf("bench seed: start cluster: %w", err)
	}
	res.ClusterStart = time.Since(t).Seconds()
	return c, nil
}

// gpuNames describes the first k visible GPUs, e.g. "2x NVIDIA H200".
// benchBackend returns the compute option and the device's name for a benchmark's --backend
// (cpu: every core; gpu: one GPU), or a usage error naming the subcommand.
func benchBackend(sub, backend string, gpus int) (gpuarray.ComputeOption, string, error) {
	switch backend {
	case "cpu":
		if gpus != 1 {
			return nil, "", fmt.Errorf("%w: bench %s: --gpus %d needs --backend gpu", errUsage, sub, gpus)
		}
		return gpuarray.Threads(0), cpuName(runtime.GOMAXPROCS(0)), nil
	case "gpu":
		if gpus < 1 {
			return nil, "", fmt.Errorf("%w: bench %s: --gpus %d must be at least 1", errUsage, sub, gpus)
		}
		if err := gpuarray.GPUError(); err != nil {
			return nil, "", fmt.Errorf("bench %s: --backend gpu: %w", sub, err)
		}
		if have := len(gpuarray.GPUs()); gpus > have {
			return nil, "", fmt.Errorf("bench %s: --gpus %d, but %d GPU(s) visible", sub, gpus, have)
		}
		if gpus == 1 {
			return gpuarray.OnGPU(), gpuNames(1), nil
		}
		devs := make([]int, gpus)
		for i := range devs {
			devs[i] = i
		}
		return gpuarray.OnGPUs(devs...), gpuNames(gpus), nil
	}
	return nil, "", fmt.Errorf("%w: bench %s: unknown --backend %q (cpu, gpu)", errUsage, sub, backend)
}

func gpuNames(k int) string {
	gs := gpuarray.GPUs()
	if len(gs) == 0 {
		return fmt.Sprintf("%d GPU(s), none visible", k)
	}
	return fmt.Sprintf("%dx %s", k, gs[0].Name)
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
			c, err := startBenchCluster(ctx, cluster.Options{NWorkers: max(*gpus, 1)}, &res)
			if err != nil {
				return err
			}
			defer c.Close()
			opt = gpuarray.On(c)
			res.Device = fmt.Sprintf("cluster of %d CPU worker(s); %s", max(*gpus, 1), cpuName(runtime.GOMAXPROCS(0)))
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
			res.Device = gpuNames(*gpus)
		case "cluster":
			devs := make([]string, *gpus)
			for i := range devs {
				devs[i] = strconv.Itoa(i)
			}
			c, err := startBenchCluster(ctx, cluster.Options{Devices: devs}, &res)
			if err != nil {
				return err
			}
			defer c.Close()
			opt = gpuarray.On(c)
			res.Device = fmt.Sprintf("cluster: %s", gpuNames(*gpus))
		default:
			return fmt.Errorf("%w: bench seed: unknown --scheduler %q (inline, threads, cluster)", errUsage, *sched)
		}
	default:
		return fmt.Errorf("%w: bench seed: unknown --backend %q (cpu, gpu)", errUsage, *backend)
	}

	if *backend == "gpu" || *sched == "cluster" {
		// Warm up as the peers do: device contexts, linked kernels and worker interpreters are
		// made once per process; the same chunk shape reuses the same compiled kernel. Every
		// GPU and worker must get work: the cluster cuts a computation into 4 batches per
		// worker, so the warm-up has at least 4*K chunks (with 2 x 2 chunks, 8 cluster workers
		// left 4 cold, and the timed run paid their kernel links: 1.5 s instead of 0.1 s).
		w0 := time.Now()
		side := 2
		for side*side < 4*max(*gpus, 1) {
			side++
		}
		wn := min(*n, side**chunk)
		wx := gpuarray.NewRandomState(*seed).Normal(10, 1, gpuarray.Shape(wn, wn), gpuarray.Chunks(*chunk, *chunk))
		if _, err := wx.Add(1).Slice(gpuarray.Every(2), gpuarray.Every(2)).Sum().Float64(opt, gpuarray.WithContext(ctx)); err != nil {
			return fmt.Errorf("bench seed: warm-up: %w", err)
		}
		res.Warmup = time.Since(w0).Seconds()
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
