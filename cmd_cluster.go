package main

import (
	"context"
	"crypto/sha256"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/interp"
)

func init() {
	register("worker", "one cluster worker", runWorker)
	register("scheduler", "a standalone scheduler (multi-node)", func(ctx context.Context, args []string) error { return errNotYet("scheduler") })
	register("cuda-worker", "one worker per local GPU (multi-node)", func(ctx context.Context, args []string) error { return errNotYet("cuda-worker") })
}

// runWorker is `gpunotes worker --scheduler ADDR [--gpu UUID] ...`. The scheduler's token comes
// from GPUNOTES_CLUSTER_TOKEN (an environment variable, so that it does not show in ps).
func runWorker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("worker", flag.ContinueOnError)
	var cfg cluster.WorkerConfig
	var cpus string
	var resources multiFlag
	fs.StringVar(&cfg.Scheduler, "scheduler", "", "scheduler address (tcp://host:port)")
	fs.StringVar(&cfg.Name, "name", "", "worker name (default: host-pid)")
	fs.IntVar(&cfg.NThreads, "nthreads", 1, "tasks run at once")
	fs.Uint64Var(&cfg.MemoryLimit, "memory-limit", 0, "host bytes for results before spilling (0: no limit)")
	fs.Uint64Var(&cfg.DeviceMemoryLimit, "device-memory-limit", 0, "GPU bytes this worker may use")
	fs.StringVar(&cfg.GPU, "gpu", "", "UUID of the worker's GPU or MIG instance")
	fs.StringVar(&cfg.GPUName, "gpu-name", "", "GPU product name, for tables")
	fs.StringVar(&cfg.GPULabel, "gpu-label", "", "GPU label, for tables")
	fs.StringVar(&cfg.LocalDirectory, "local-directory", "", "directory for spilled results")
	fs.StringVar(&cpus, "cpus", "", "CPU affinity, comma-separated CPU numbers")
	fs.Var(&resources, "resource", "NAME=AMOUNT resource this worker offers (repeatable)")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if cfg.Scheduler == "" {
		return fmt.Errorf("%w: --scheduler is required", errUsage)
	}
	cfg.Token = os.Getenv("GPUNOTES_CLUSTER_TOKEN")
	if cpus != "" {
		for _, c := range strings.Split(cpus, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(c))
			if err != nil {
				return fmt.Errorf("%w: --cpus %q: %v", errUsage, cpus, err)
			}
			cfg.CPUs = append(cfg.CPUs, n)
		}
	}
	cfg.Resources = map[string]float64{}
	for _, r := range resources {
		k, v, ok := strings.Cut(r, "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return fmt.Errorf("%w: --resource %q: want NAME=AMOUNT", errUsage, r)
		}
		cfg.Resources[k] = f
	}
	return cluster.RunWorker(ctx, cfg, newSourceEvaluator())
}

type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(s string) error { *m = append(*m, s); return nil }

// sourceEvaluator runs shipped functions in interpreter sessions with the standard library and
// the preloaded packages. Each distinct source gets its own session (cached by hash), so a
// function redeclared in a later cell never meets its stale older version.
type sourceEvaluator struct {
	mu       sync.Mutex
	sessions map[[32]byte]*evalSession
	order    [][32]byte
}

type evalSession struct {
	once sync.Once
	s    *interp.Session
	err  error
}

const maxPrograms = 64

func newSourceEvaluator() *sourceEvaluator {
	return &sourceEvaluator{sessions: map[[32]byte]*evalSession{}}
}

// Call runs fn from src with args (see interp.Session.Call).
func (e *sourceEvaluator) Call(ctx context.Context, src, fn string, args []any) ([]any, error) {
	key := sha256.Sum256([]byte(src))
	e.mu.Lock()
	es := e.sessions[key]
	if es == nil {
		es = &evalSession{}
		e.sessions[key] = es
		e.order = append(e.order, key)
		if len(e.order) > maxPrograms {
			delete(e.sessions, e.order[0])
			e.order = e.order[1:]
		}
	}
	e.mu.Unlock()
	es.once.Do(func() { es.s, es.err = newSession() })
	if es.err != nil {
		return nil, fmt.Errorf("start interpreter: %w", es.err)
	}
	return es.s.Call(ctx, src, fn, args)
}
