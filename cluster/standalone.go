package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/cluster/gpuinfo"
)

// SchedulerConfig configures ServeScheduler; the flags of `gpunotes scheduler` map onto it.
type SchedulerConfig struct {
	// Listen is the TCP address for workers and clients ("host:port").
	Listen string
	// Token is the shared secret workers and clients must prove they know (under TLS too);
	// when empty, one is generated and given to GeneratedToken.
	Token string
	// GeneratedToken receives the token generated when Token is empty.
	GeneratedToken func(token string)
	// TLS, when set, requires TLS of every worker and client (plaintext is refused and
	// logged), and mutual TLS when TLS.CA is set. See TLSFiles.
	TLS TLSFiles
	// Dashboard is the dashboard's address (default "127.0.0.1:8787"; "off": none). Beyond
	// loopback it needs Token, and every request must carry it.
	Dashboard string
	// Heartbeat is how long a worker may stay silent before its tasks run elsewhere (default 5 s).
	Heartbeat time.Duration
	// Logf receives the scheduler's events: workers joining and leaving, refusals with the
	// remote address, clients connecting.
	Logf func(format string, args ...any)
	// Ready, when set, is called once the scheduler listens, with its address and the
	// dashboard's URL ("" when off).
	Ready func(addr, dashboard string)
}

// ServeScheduler runs a standalone scheduler until ctx ends. Workers (`gpunotes cuda-worker`)
// and clients (Connect) come and go: a client that disconnects loses its tasks, the scheduler
// keeps serving. When ServeScheduler returns, workers are not told to exit, so workers started
// with Reconnect join the next scheduler at the same address.
func ServeScheduler(ctx context.Context, cfg SchedulerConfig) error {
	if cfg.Listen == "" {
		return errors.New("scheduler: no listen address")
	}
	if _, err := loopbackAddr(cfg.Listen); err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	var err error
	if cfg.Token == "" {
		// Loopback too: any local user could otherwise run code on the workers. As Jupyter
		// does, a token is generated when none is given.
		if cfg.Token, err = NewToken(); err != nil {
			return fmt.Errorf("scheduler: %w", err)
		}
		if cfg.GeneratedToken != nil {
			cfg.GeneratedToken(cfg.Token)
		}
	}
	var tlsCfg *tls.Config
	if cfg.TLS.Enabled() {
		if tlsCfg, err = cfg.TLS.ServerConfig(); err != nil {
			return fmt.Errorf("scheduler: %w", err)
		}
	}
	s, err := newScheduler(cfg.Listen, cfg.Token, tlsCfg)
	if err != nil {
		return fmt.Errorf("scheduler: %w", err)
	}
	if cfg.Logf != nil {
		s.logf = cfg.Logf
	}
	if cfg.Heartbeat > 0 {
		s.heartbeat = cfg.Heartbeat
	}
	var dash string
	stopDash := func() {}
	if cfg.Dashboard != "off" {
		addr := cfg.Dashboard
		if addr == "" {
			addr = "127.0.0.1:8787"
		}
		dash, stopDash, err = s.startDashboard(addr, cfg.Token)
		if err != nil {
			s.shutdown(false)
			return fmt.Errorf("scheduler: %w", err)
		}
	}
	defer stopDash()
	s.logf("scheduler listening at %s (%s); dashboard %s", s.address(), tlsNote(tlsCfg != nil, cfg.TLS.CA != ""), orNone(dash))
	if cfg.Ready != nil {
		cfg.Ready(s.address(), dash)
	}
	<-ctx.Done()
	s.logf("scheduler stopping")
	s.shutdown(false)
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "off"
	}
	return s
}

// CUDAWorkerConfig configures RunCUDAWorker; the flags of `gpunotes cuda-worker` map onto it.
type CUDAWorkerConfig struct {
	Scheduler string // "tcp://host:port"
	Token     string
	// NamePrefix names the workers PREFIX-gpu0, PREFIX-gpu1, … or PREFIX-cpu0 (default: the
	// host name). Names must be unique in the cluster.
	NamePrefix string
	// NWorkers caps the GPU workers, or sets the number of CPU workers (default 1) when
	// there are no GPUs.
	NWorkers         int
	ThreadsPerWorker int
	MemoryLimit      string // as Options.MemoryLimit
	// DeviceMemoryLimit is as Options.DeviceMemoryLimit.
	DeviceMemoryLimit string
	CPUOnly           bool
	Devices           []string
	LocalDirectory    string
	Resources         map[string]float64
	// Reconnect is the longest wait between a worker's attempts to reach the scheduler
	// (default 5 s).
	Reconnect time.Duration
	// TLS is passed to every worker (`gpunotes worker --tls-cert … --tls-key … --tls-ca …`).
	TLS TLSFiles
	// Binary is the gpunotes executable run as `gpunotes worker` (default: this executable).
	Binary string
	Logf   func(format string, args ...any)
}

// RunCUDAWorker starts one worker process per local GPU (or CPU workers without GPUs), joined
// to a remote scheduler, and restarts them when they die, until ctx ends. Workers reconnect by
// themselves when the scheduler restarts. A worker refused by the scheduler (a wrong token)
// ends it with an error wrapping ErrRefused.
func RunCUDAWorker(ctx context.Context, cfg CUDAWorkerConfig) error {
	if cfg.Scheduler == "" {
		return errors.New("cuda-worker: no scheduler address")
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if cfg.Reconnect <= 0 {
		cfg.Reconnect = 5 * time.Second
	}
	if cfg.NamePrefix == "" {
		cfg.NamePrefix, _ = os.Hostname()
	}
	addr := cfg.Scheduler
	if !strings.HasPrefix(addr, "tcp://") {
		addr = "tcp://" + addr
	}
	if _, _, err := net.SplitHostPort(strings.TrimPrefix(addr, "tcp://")); err != nil {
		return fmt.Errorf("cuda-worker: scheduler address %q: %w", cfg.Scheduler, err)
	}
	opts := Options{Devices: cfg.Devices, NWorkers: cfg.NWorkers, ThreadsPerWorker: cfg.ThreadsPerWorker,
		MemoryLimit: cfg.MemoryLimit, DeviceMemoryLimit: cfg.DeviceMemoryLimit, CPUOnly: cfg.CPUOnly,
		LocalDirectory: cfg.LocalDirectory, Resources: cfg.Resources, TLS: cfg.TLS}
	var gpus []gpuinfo.GPU
	var gpuErr error
	if !cfg.CPUOnly {
		gpus, gpuErr = gpuinfo.Discover()
		if gpuErr != nil && !errors.Is(gpuErr, gpuinfo.ErrNoNVML) {
			return fmt.Errorf("cuda-worker: %w", gpuErr)
		}
	}
	env, set := os.LookupEnv("CUDA_VISIBLE_DEVICES")
	specs, err := planWorkers(opts, gpus, gpuErr, env, set, hostMemory())
	if err != nil {
		return fmt.Errorf("cuda-worker: %w", err)
	}
	bin := cfg.Binary
	if bin == "" {
		if bin, err = os.Executable(); err != nil {
			return fmt.Errorf("cuda-worker: locate the gpunotes binary: %w", err)
		}
	}
	failed := make(chan error, len(specs))
	var nannies []*nanny
	var wg sync.WaitGroup
	for _, sp := range specs {
		sp.name = cfg.NamePrefix + "-" + sp.name
		n := &nanny{addr: addr, token: cfg.Token, opts: opts, spec: sp, bin: bin, failed: failed,
			extra: []string{"--reconnect", cfg.Reconnect.String()},
			note:  func(name, reason string) { cfg.Logf("worker %s exited: %s", name, reason) }}
		nannies = append(nannies, n)
		kind := "CPU"
		if sp.slot != nil {
			kind = sp.slot.label() + " " + sp.slot.gpu.Name
		}
		cfg.Logf("starting worker %s (%s, %d threads) for scheduler %s", sp.name, kind, sp.threads, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.run()
		}()
	}
	var result error
	select {
	case <-ctx.Done():
	case err := <-failed:
		result = fmt.Errorf("cuda-worker: %w", err)
		if strings.Contains(err.Error(), "refused") {
			result = fmt.Errorf("cuda-worker: %w: %v", ErrRefused, err)
		}
	}
	for _, n := range nannies {
		n.stop()
		n.signal()
	}
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(3 * time.Second):
		for _, n := range nannies {
			n.kill()
		}
		<-stopped
	}
	return result
}
