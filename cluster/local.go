package cluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gpunotes/gpunotes/cluster/gpuinfo"
)

// Options configures NewLocalCUDA. The zero value starts one worker per visible GPU, or one
// CPU worker when there is no GPU.
type Options struct {
	// Devices chooses GPUs: indices (counting the GPUs visible to this process), GPU-… UUIDs or
	// unique prefixes, or MIG-… UUIDs. Empty: the GPUs of CUDA_VISIBLE_DEVICES, else all.
	Devices []string
	// NWorkers caps the number of GPU workers; for a CPU-only cluster it is the number of
	// workers (default 1).
	NWorkers int
	// ThreadsPerWorker is how many tasks a worker runs at once (GPU workers: 1; CPU workers:
	// the CPUs divided among the workers).
	ThreadsPerWorker int
	// MemoryLimit is each worker's host memory for results before they spill to disk: bytes
	// ("4GiB"), a percentage or fraction of the machine's memory ("25%", "0.25"), or "0" for no
	// limit. Default: the machine's memory divided among the workers.
	MemoryLimit string
	// DeviceMemoryLimit is the share of a GPU's memory its workers may use (default "80%").
	// Persisted chunks a GPU worker holds on its device may take 60% of it; beyond, the least
	// recently used go to host memory (and from there to disk under MemoryLimit).
	DeviceMemoryLimit string
	// WorkersPerGPU splits each GPU into that many virtual GPUs: the workers share it, each with
	// 1/N of the device memory limit. MPS is used when its daemon runs.
	WorkersPerGPU int
	// LocalDirectory holds spilled results (default: the temp dir).
	LocalDirectory string
	// CPUOnly starts CPU workers even when GPUs are present.
	CPUOnly bool
	// Listen is the scheduler's TCP address (default "127.0.0.1:0", loopback only).
	Listen string
	// TLS puts the scheduler and the workers' connections (to it and to each other) under
	// TLS; the scheduler's certificate must name the host of Listen (e.g. IP 127.0.0.1).
	TLS TLSFiles
	// Binary is the gpunotes executable run as `gpunotes worker` (default: this executable).
	Binary string
	// Retries is how often a task is retried after its worker died (default 3).
	Retries int
	// Resources are extra abstract resources every worker offers (see Resources).
	Resources map[string]float64
	// StartTimeout bounds the wait for workers to join (default 60 s).
	StartTimeout time.Duration
	// Dashboard is the live dashboard's address (default "127.0.0.1:0": loopback, a free
	// port; "off": none). Beyond loopback every request must carry the cluster's token, which
	// the URL of Dashboard() includes.
	Dashboard string
}

// workerSpec is how one worker process is started.
type workerSpec struct {
	name              string
	slot              *slot
	threads           int
	memoryLimit       uint64
	deviceMemoryLimit uint64
}

// LocalCUDA is a cluster on this machine: a scheduler in this process and one worker process
// per GPU, MIG instance or virtual GPU (or CPU workers without GPUs). It embeds a Client, so
// c.Submit and Compute(gpuarray.On(c)) work on it directly.
type LocalCUDA struct {
	*Client
	opts     Options
	sched    *scheduler
	token    string
	specs    []workerSpec
	nannies  []*nanny
	gpus     []gpuinfo.GPU
	gpuErr   error
	mps      bool
	startDur time.Duration
	closeMu  sync.Mutex
	closed   bool
	watchers sync.WaitGroup
	stopCh   chan struct{}
	stopDash func()
	bin      string
	// mu guards nannies (Scale, Adapt and RetireWorkers change them); scaleMu orders the
	// changes.
	mu        sync.Mutex
	scaleMu   sync.Mutex
	adaptStop context.CancelFunc
	adaptDone chan struct{}
}

// NewLocalCUDA starts a local cluster and waits until every worker has joined. It discovers
// GPUs with NVML; without NVML or GPUs it starts CPU workers.
func NewLocalCUDA(opts Options) (*LocalCUDA, error) {
	start := time.Now()
	c := &LocalCUDA{opts: opts, stopCh: make(chan struct{})}
	if err := c.plan(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	bin := opts.Binary
	if bin == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("cluster: locate the gpunotes binary: %w", err)
		}
		bin = exe
	}
	if _, err := os.Stat(bin); err != nil {
		return nil, fmt.Errorf("cluster: worker binary: %w", err)
	}
	c.bin = bin
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, fmt.Errorf("cluster: token: %w", err)
	}
	c.token = hex.EncodeToString(tok)
	listen := opts.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	var tlsCfg *tls.Config
	if opts.TLS.Enabled() {
		var err error
		if tlsCfg, err = opts.TLS.ServerConfig(); err != nil {
			return nil, fmt.Errorf("cluster: %w", err)
		}
	}
	s, err := newScheduler(listen, c.token, tlsCfg)
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	c.sched = s
	if opts.Dashboard != "off" {
		addr := opts.Dashboard
		if addr == "" {
			addr = "127.0.0.1:0"
		}
		_, stop, err := s.startDashboard(addr, c.token)
		if err != nil {
			s.close()
			return nil, fmt.Errorf("cluster: %w", err)
		}
		c.stopDash = stop
	}
	c.Client = newClient(s, opts.Retries)
	c.Client.owner = c
	failed := make(chan error, len(c.specs))
	for i := range c.specs {
		n := &nanny{addr: s.address(), token: c.token, opts: opts, note: s.noteRestart,
			spec: c.specs[i], bin: bin, failed: failed}
		c.nannies = append(c.nannies, n)
	}
	for _, n := range c.nannies {
		go n.run()
	}
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	want := map[string]bool{}
	for _, sp := range c.specs {
		want[sp.name] = true
	}
	for len(want) > 0 {
		select {
		case name := <-s.joinCh:
			delete(want, name)
		case err := <-failed:
			c.Close()
			return nil, fmt.Errorf("cluster: %w", err)
		case <-timer.C:
			c.Close()
			names := make([]string, 0, len(want))
			for n := range want {
				names = append(names, n)
			}
			sort.Strings(names)
			return nil, fmt.Errorf("cluster: workers %v did not join within %v", names, timeout)
		}
	}
	c.startDur = time.Since(start)
	defaultClient.Store(c.Client)
	return c, nil
}

// plan decides which workers to start.
func (c *LocalCUDA) plan() error {
	if !c.opts.CPUOnly {
		c.gpus, c.gpuErr = gpuinfo.Discover()
		if c.gpuErr != nil && !errors.Is(c.gpuErr, gpuinfo.ErrNoNVML) {
			return c.gpuErr
		}
	}
	env, set := envCUDA()
	specs, err := planWorkers(c.opts, c.gpus, c.gpuErr, env, set, hostMemory())
	if err != nil {
		return err
	}
	c.specs = specs
	c.mps = c.opts.WorkersPerGPU > 1 && len(specs) > 0 && specs[0].slot != nil && mpsRunning()
	return nil
}

// planWorkers turns options and the discovered GPUs into worker specs.
func planWorkers(o Options, gpus []gpuinfo.GPU, gpuErr error, env string, envSet bool, hostMem uint64) ([]workerSpec, error) {
	if o.NWorkers < 0 || o.ThreadsPerWorker < 0 || o.WorkersPerGPU < 0 || o.Retries < 0 {
		return nil, errors.New("NWorkers, ThreadsPerWorker, WorkersPerGPU and Retries must not be negative")
	}
	per := o.WorkersPerGPU
	if per == 0 {
		per = 1
	}
	var specs []workerSpec
	var slots []slot
	if o.CPUOnly {
		gpus = nil
	}
	if len(gpus) > 0 {
		var err error
		if slots, err = selectSlots(gpus, o.Devices, env, envSet); err != nil {
			return nil, err
		}
	} else if len(o.Devices) > 0 {
		why := "no GPUs were found"
		if gpuErr != nil {
			why = gpuErr.Error()
		}
		if o.CPUOnly {
			why = "CPUOnly is set"
		}
		return nil, fmt.Errorf("option Devices %v: %s", o.Devices, why)
	}
	if len(slots) > 0 {
		n := len(slots) * per
		if o.NWorkers > n {
			return nil, fmt.Errorf("NWorkers %d exceeds the %d GPU workers available (%d devices × WorkersPerGPU %d)", o.NWorkers, n, len(slots), per)
		}
		if o.NWorkers > 0 {
			n = o.NWorkers
		}
		threads := o.ThreadsPerWorker
		if threads == 0 {
			threads = 1
		}
		for i := 0; i < n; i++ {
			sl := slots[i/per]
			devLimit, err := parseSize(o.DeviceMemoryLimit, sl.memTotal, sl.memTotal*8/10)
			if err != nil {
				return nil, fmt.Errorf("DeviceMemoryLimit: %w", err)
			}
			hostLimit, err := parseSize(o.MemoryLimit, hostMem, hostMem/uint64(n))
			if err != nil {
				return nil, fmt.Errorf("MemoryLimit: %w", err)
			}
			name := fmt.Sprintf("gpu%d", sl.gpu.Index)
			if sl.mig != nil {
				name += fmt.Sprintf("-mig%d", sl.mig.Index)
			}
			if per > 1 {
				name += fmt.Sprintf("-v%d", i%per)
			}
			s := sl
			specs = append(specs, workerSpec{name: name, slot: &s, threads: threads,
				memoryLimit: hostLimit, deviceMemoryLimit: devLimit / uint64(per)})
		}
		return specs, nil
	}
	if o.WorkersPerGPU > 1 && !o.CPUOnly {
		return nil, fmt.Errorf("WorkersPerGPU %d needs GPUs, and none were found", o.WorkersPerGPU)
	}
	n := o.NWorkers
	if n == 0 {
		n = 1
	}
	threads := o.ThreadsPerWorker
	if threads == 0 {
		threads = runtime.NumCPU() / n
		if threads < 1 {
			threads = 1
		}
	}
	for i := 0; i < n; i++ {
		hostLimit, err := parseSize(o.MemoryLimit, hostMem, hostMem/uint64(n))
		if err != nil {
			return nil, fmt.Errorf("MemoryLimit: %w", err)
		}
		specs = append(specs, workerSpec{name: fmt.Sprintf("cpu%d", i), threads: threads, memoryLimit: hostLimit})
	}
	return specs, nil
}

func envCUDA() (string, bool) { return os.LookupEnv("CUDA_VISIBLE_DEVICES") }

// Address returns the scheduler's address ("tcp://127.0.0.1:PORT").
func (c *LocalCUDA) Address() string { return c.sched.address() }

// StartTime is how long NewLocalCUDA took until every worker had joined.
func (c *LocalCUDA) StartTime() time.Duration { return c.startDur }

// WorkerPIDs returns the process ids of the running workers, by worker name.
func (c *LocalCUDA) WorkerPIDs() map[string]int {
	out := map[string]int{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nannies {
		n.mu.Lock()
		if n.pid != 0 && n.proc != nil {
			out[n.spec.name] = n.pid
		}
		n.mu.Unlock()
	}
	return out
}

// Restarts returns how often the nanny restarted each worker, and why it last died.
func (c *LocalCUDA) Restarts() map[string]string {
	out := map[string]string{}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, n := range c.nannies {
		n.mu.Lock()
		if n.restarts > 0 {
			out[n.spec.name] = fmt.Sprintf("%d restarts, last: %s", n.restarts, n.lastExit)
		}
		n.mu.Unlock()
	}
	return out
}

// Close stops the workers and the scheduler. Workers get a close message, then SIGKILL after
// two seconds; Close returns when every worker process has exited.
func (c *LocalCUDA) Close() error {
	c.closeMu.Lock()
	if c.closed {
		c.closeMu.Unlock()
		return nil
	}
	c.closed = true
	close(c.stopCh)
	c.closeMu.Unlock()
	c.StopAdapt()
	defaultClient.CompareAndSwap(c.Client, nil)
	c.mu.Lock()
	nannies := append([]*nanny(nil), c.nannies...)
	c.mu.Unlock()
	for _, n := range nannies {
		n.stop()
	}
	if c.sched != nil {
		c.sched.close()
	}
	if c.stopDash != nil {
		c.stopDash()
	}
	deadline := time.After(2 * time.Second)
	for _, n := range nannies {
		select {
		case <-n.exited():
		case <-deadline:
			n.kill()
			<-n.exited()
		}
	}
	c.watchers.Wait()
	return nil
}

// nanny starts one worker process and restarts it when it dies.
type nanny struct {
	addr     string   // the scheduler's address
	token    string   // passed to the worker in its environment
	opts     Options  // LocalDirectory and Resources are used
	extra    []string // more `gpunotes worker` arguments
	note     func(name, reason string)
	spec     workerSpec
	bin      string
	failed   chan error
	mu       sync.Mutex
	proc     *os.Process
	pid      int
	restarts int
	lastExit string
	stopping bool
	expected bool  // the next exit was asked for (RestartWorkers): restart without counting it
	failErr  error // why the nanny gave up
	log      *tail // the worker's last output (WorkerLogs)
	done     chan struct{}
	doneOnce sync.Once
}

func (n *nanny) exited() <-chan struct{} { return n.doneChan() }

func (n *nanny) doneChan() chan struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.done == nil {
		n.done = make(chan struct{})
	}
	return n.done
}

func (n *nanny) finish() {
	ch := n.doneChan()
	n.doneOnce.Do(func() { close(ch) })
}

func (n *nanny) stop() {
	n.mu.Lock()
	n.stopping = true
	n.mu.Unlock()
}

// signal asks the worker to exit (SIGTERM).
func (n *nanny) signal() {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p != nil {
		_ = p.Signal(syscall.SIGTERM)
	}
}

func (n *nanny) kill() {
	n.mu.Lock()
	p := n.proc
	n.mu.Unlock()
	if p != nil {
		_ = p.Kill()
	}
}

func (n *nanny) command() *exec.Cmd {
	sp := n.spec
	args := []string{"worker", "--scheduler", n.addr, "--name", sp.name,
		"--nthreads", strconv.Itoa(sp.threads), "--memory-limit", strconv.FormatUint(sp.memoryLimit, 10)}
	args = append(args, n.extra...)
	args = append(args, n.opts.TLS.Args()...)
	if n.opts.LocalDirectory != "" {
		args = append(args, "--local-directory", n.opts.LocalDirectory)
	}
	env := append(os.Environ(), "GPUNOTES_CLUSTER_TOKEN="+n.token)
	if sl := sp.slot; sl != nil {
		args = append(args, "--gpu", sl.uuid, "--gpu-name", sl.gpu.Name, "--gpu-label", sl.label(),
			"--device-memory-limit", strconv.FormatUint(sp.deviceMemoryLimit, 10))
		if len(sl.gpu.CPUAffinity) > 0 && len(sl.gpu.CPUAffinity) < runtime.NumCPU() {
			args = append(args, "--cpus", joinInts(sl.gpu.CPUAffinity))
		}
		env = append(env, "CUDA_VISIBLE_DEVICES="+sl.uuid, "CUDA_DEVICE_ORDER=PCI_BUS_ID")
	} else {
		env = append(env, "CUDA_VISIBLE_DEVICES=")
	}
	for k, v := range n.opts.Resources {
		args = append(args, "--resource", fmt.Sprintf("%s=%g", k, v))
	}
	cmd := exec.Command(n.bin, args...)
	cmd.Env = env
	// Own process group: an interrupt sent to the kernel's group does not reach workers.
	// Pdeathsig: workers die with the kernel (they also exit when the scheduler connection drops).
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	return cmd
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// tail keeps the last bytes written to it (a worker's stderr, for death reports).
type tail struct {
	mu  sync.Mutex
	buf []byte
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.buf = append(t.buf, p...)
	if len(t.buf) > 4096 {
		t.buf = append([]byte(nil), t.buf[len(t.buf)-4096:]...)
	}
	return len(p), nil
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(bytes.TrimSpace(t.buf))
}

// run starts the worker and restarts it when it dies, until the cluster closes. The goroutine
// holds its OS thread: Pdeathsig fires when the thread that started the child exits, so that
// thread must live as long as the cluster.
func (n *nanny) run() {
	runtime.LockOSThread()
	defer n.finish()
	var recent []time.Time
	for {
		cmd := n.command()
		errTail := &tail{}
		n.mu.Lock()
		n.log = errTail
		n.mu.Unlock()
		cmd.Stderr = errTail
		cmd.Stdout = errTail
		if err := cmd.Start(); err != nil {
			n.reportFailure(fmt.Errorf("start worker %s: %w", n.spec.name, err))
			return
		}
		n.mu.Lock()
		n.proc, n.pid = cmd.Process, cmd.Process.Pid
		n.mu.Unlock()
		err := cmd.Wait()
		// A worker killed (SIGKILL, the OOM killer) leaves its spilled results and shuffle
		// shards behind: nobody else will read them.
		if rerr := os.RemoveAll(workerSpillDir(n.opts.LocalDirectory, n.spec.name, cmd.Process.Pid)); rerr != nil {
			fmt.Fprintf(os.Stderr, "gpunotes: worker %s: remove its spill directory: %v\n", n.spec.name, rerr)
		}
		n.mu.Lock()
		n.proc = nil
		stopping := n.stopping
		reason := exitReason(cmd, err)
		if msg := errTail.String(); msg != "" {
			reason += ": " + lastLines(msg, 3)
		}
		n.lastExit = reason
		expected := n.expected
		n.expected = false
		n.mu.Unlock()
		if stopping {
			return
		}
		if expected {
			n.note(n.spec.name, "restarted on request")
			continue
		}
		if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Exited() && ws.ExitStatus() == ExitRefused {
			n.reportFailure(fmt.Errorf("worker %s was refused by the scheduler: %s", n.spec.name, reason))
			return
		}
		now := time.Now()
		recent = append(recent, now)
		for len(recent) > 0 && now.Sub(recent[0]) > 30*time.Second {
			recent = recent[1:]
		}
		if len(recent) > 5 {
			n.reportFailure(fmt.Errorf("worker %s died %d times in 30 s; last: %s", n.spec.name, len(recent), reason))
			return
		}
		n.mu.Lock()
		n.restarts++
		n.mu.Unlock()
		n.note(n.spec.name, reason)
	}
}

// ExitRefused is the exit status of `gpunotes worker` when the scheduler refused it (a wrong
// token or protocol version); nannies do not restart such a worker.
const ExitRefused = 3

func (n *nanny) reportFailure(err error) {
	n.mu.Lock()
	n.failErr = err
	n.mu.Unlock()
	select {
	case n.failed <- err:
	default:
	}
	n.note(n.spec.name, "gave up: "+err.Error())
}

func exitReason(cmd *exec.Cmd, err error) string {
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return "killed by signal " + ws.Signal().String()
	}
	if err != nil {
		return err.Error()
	}
	return "exited with status 0"
}

func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// context for compiled callers that pass none.
func ctxOr(ctx context.Context) context.Context {
	if ctx == nil {
		return cellContext()
	}
	return ctx
}
