package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/interp"
)

func init() {
	register("worker", "one cluster worker", runWorker)
	register("scheduler", "a standalone scheduler (multi-node): scheduler --listen ADDR [--token-file FILE] [--dashboard ADDR] [--tls-cert F --tls-key F [--tls-ca F]]", runScheduler)
	register("cuda-worker", "one worker per local GPU joined to a scheduler: cuda-worker tcp://HOST:PORT [--token-file FILE] [--tls-cert F --tls-key F --tls-ca F]", runCUDAWorker)
}

// logf prints a timestamped line on stderr: the log of scheduler and cuda-worker.
func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s %s\n", time.Now().Format("2006-01-02T15:04:05.000"), fmt.Sprintf(format, args...))
}

// tokenFlags adds --token-file, and a --token that is refused: a token in argv is visible to
// every local user in the process list.
func tokenFlags(fs *flag.FlagSet, file, argv *string, who string) {
	fs.StringVar(file, "token-file", "", "file holding the cluster token "+who+" (default: $GPUNOTES_CLUSTER_TOKEN)")
	fs.StringVar(argv, "token", "", "refused: pass the token in $GPUNOTES_CLUSTER_TOKEN or --token-file, not in argv")
}

// clusterToken reads the token from file, else GPUNOTES_CLUSTER_TOKEN. A token given in argv
// is refused. A missing file is not an error when create is set: it reports "" and the caller
// generates one and writes it there.
func clusterToken(file, argv string, create bool) (string, error) {
	if argv != "" {
		return "", fmt.Errorf("%w: --token puts the token in the process list, where every local user can read it; set GPUNOTES_CLUSTER_TOKEN or pass --token-file FILE", errUsage)
	}
	if file != "" {
		b, err := os.ReadFile(file)
		if errors.Is(err, os.ErrNotExist) && create {
			return "", nil
		}
		if err != nil {
			return "", fmt.Errorf("token file: %w", err)
		}
		tok := strings.TrimSpace(string(b))
		if tok == "" {
			return "", fmt.Errorf("token file %s is empty", file)
		}
		return tok, nil
	}
	return os.Getenv("GPUNOTES_CLUSTER_TOKEN"), nil
}

// tlsFlags adds --tls-cert, --tls-key and --tls-ca to fs, filling f.
func tlsFlags(fs *flag.FlagSet, f *cluster.TLSFiles, who string) {
	fs.StringVar(&f.Cert, "tls-cert", "", "PEM certificate "+who+" presents: turns TLS on")
	fs.StringVar(&f.Key, "tls-key", "", "PEM private key of --tls-cert")
	fs.StringVar(&f.CA, "tls-ca", "", "PEM CA certificates: verify peers against them and require their certificates (mutual TLS)")
}

// runScheduler is `gpunotes scheduler --listen ADDR [--token-file FILE] [--dashboard ADDR]`.
func runScheduler(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("scheduler", flag.ContinueOnError)
	var cfg cluster.SchedulerConfig
	var tokenFile, tokenArgv string
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8786", "address for workers and clients (host:port)")
	tokenFlags(fs, &tokenFile, &tokenArgv, "(created with a new token when missing; without either, a token is generated and logged)")
	fs.StringVar(&cfg.Dashboard, "dashboard", "127.0.0.1:8787", `dashboard address, or "off"; beyond loopback it needs the token`)
	fs.DurationVar(&cfg.Heartbeat, "heartbeat", 5*time.Second, "how long a worker may stay silent before its tasks run elsewhere")
	tlsFlags(fs, &cfg.TLS, "the scheduler")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: scheduler: unexpected arguments %q", errUsage, fs.Args())
	}
	cfg.Listen = strings.TrimPrefix(cfg.Listen, "tcp://")
	var err error
	if cfg.Token, err = clusterToken(tokenFile, tokenArgv, true); err != nil {
		return err
	}
	cfg.GeneratedToken = func(tok string) {
		if tokenFile == "" {
			// As Jupyter Server logs its generated token.
			logf("no token given: generated one; workers and clients need GPUNOTES_CLUSTER_TOKEN=%s", tok)
			return
		}
		if err := os.WriteFile(tokenFile, []byte(tok+"\n"), 0o600); err != nil {
			logf("could not write the generated token to %s: %v", tokenFile, err)
			return
		}
		logf("no token given: generated one and wrote it to %s (mode 0600)", tokenFile)
	}
	cfg.Logf = logf
	cfg.Ready = func(addr, dash string) {
		// One line on stdout for whoever started us (tests, scripts): the address and dashboard.
		if dash == "" {
			dash = "off"
		}
		fmt.Printf("scheduler %s dashboard %s\n", addr, dash)
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	cluster.SetSchedulerEvaluator(newSourceEvaluator()) // RunOnScheduler
	return cluster.ServeScheduler(ctx, cfg)
}

// runCUDAWorker is `gpunotes cuda-worker tcp://HOST:PORT [--token-file FILE] [--nworkers N] ...`.
func runCUDAWorker(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("cuda-worker", flag.ContinueOnError)
	var cfg cluster.CUDAWorkerConfig
	var tokenFile, tokenArgv, devices string
	var resources multiFlag
	tokenFlags(fs, &tokenFile, &tokenArgv, "")
	fs.StringVar(&cfg.NamePrefix, "name-prefix", "", "worker names are PREFIX-gpuN or PREFIX-cpuN (default: host name)")
	fs.IntVar(&cfg.NWorkers, "nworkers", 0, "GPU workers at most, or CPU workers when there is no GPU (default 1)")
	fs.IntVar(&cfg.ThreadsPerWorker, "nthreads", 0, "tasks a worker runs at once (GPU: 1; CPU: cores / workers)")
	fs.StringVar(&cfg.MemoryLimit, "memory-limit", "", "host memory per worker before spilling (bytes, 4GiB, 25%)")
	fs.StringVar(&cfg.DeviceMemoryLimit, "device-memory-limit", "", "share of a GPU's memory (default 80%)")
	fs.BoolVar(&cfg.CPUOnly, "cpu", false, "start CPU workers even when GPUs are present")
	fs.StringVar(&devices, "devices", "", "GPUs to use: indices or UUIDs, comma-separated")
	fs.StringVar(&cfg.LocalDirectory, "local-directory", "", "directory for spilled results")
	fs.DurationVar(&cfg.Reconnect, "reconnect", 5*time.Second, "longest wait between attempts to reach the scheduler")
	fs.Var(&resources, "resource", "NAME=AMOUNT resource every worker offers (repeatable)")
	tlsFlags(fs, &cfg.TLS, "every worker (to the scheduler and on its data port)")
	// The address may come before or after the flags.
	var pos []string
	for len(args) > 0 {
		if err := fs.Parse(args); err != nil {
			return fmt.Errorf("%w: %v", errUsage, err)
		}
		args = fs.Args()
		if len(args) > 0 {
			pos = append(pos, args[0])
			args = args[1:]
		}
	}
	if len(pos) != 1 {
		return fmt.Errorf("%w: cuda-worker tcp://HOST:PORT [--token-file FILE] [flags]", errUsage)
	}
	cfg.Scheduler = pos[0]
	var err error
	if cfg.Token, err = clusterToken(tokenFile, tokenArgv, false); err != nil {
		return err
	}
	if cfg.Token == "" {
		return fmt.Errorf("%w: cuda-worker needs the scheduler's token: set GPUNOTES_CLUSTER_TOKEN or pass --token-file FILE", errUsage)
	}
	if devices != "" {
		cfg.Devices = strings.Split(devices, ",")
	}
	res, err := parseResources(resources)
	if err != nil {
		return err
	}
	cfg.Resources = res
	cfg.Logf = logf
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt)
	defer stop()
	return cluster.RunCUDAWorker(ctx, cfg)
}

func parseResources(rs []string) (map[string]float64, error) {
	out := map[string]float64{}
	for _, r := range rs {
		k, v, ok := strings.Cut(r, "=")
		f, err := strconv.ParseFloat(v, 64)
		if !ok || err != nil {
			return nil, fmt.Errorf("%w: --resource %q: want NAME=AMOUNT", errUsage, r)
		}
		out[k] = f
	}
	return out, nil
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
	tlsFlags(fs, &cfg.TLS, "the worker (to the scheduler and on its data port)")
	fs.DurationVar(&cfg.Reconnect, "reconnect", 0, "keep reconnecting when the scheduler goes away, waiting at most this long between attempts (0: exit)")
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
	res, err := parseResources(resources)
	if err != nil {
		return err
	}
	cfg.Resources = res
	if cfg.Reconnect > 0 {
		cfg.Logf = logf
	}
	err = cluster.RunWorker(ctx, cfg, newSourceEvaluator())
	if errors.Is(err, cluster.ErrRefused) {
		// A distinct status, so that nannies do not restart a worker that cannot join.
		fmt.Fprintf(os.Stderr, "gpunotes worker: %v\n", err)
		os.Exit(cluster.ExitRefused)
	}
	return err
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
