package slurm

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/display"
)

// Options configures New. The zero value submits no job: call Scale or Adapt.
type Options struct {
	// Partition, Account and QOS are sbatch's --partition, --account and --qos ("": the site's
	// default).
	Partition string
	Account   string
	QOS       string
	// GPUsPerJob is how many GPUs each job asks for (--gres=gpu:N); the job runs one worker per
	// GPU. Zero: CPU workers (WorkersPerJob of them).
	GPUsPerJob int
	// WorkersPerJob is the number of CPU workers in a job without GPUs (default 1).
	WorkersPerJob int
	// CPUsPerJob is --cpus-per-task (0: the site's default).
	CPUsPerJob int
	// Memory is --mem ("64G"; "": the site's default).
	Memory string
	// Jobs is how many jobs New submits.
	Jobs int
	// Walltime is --time ("01:00:00"; "": the partition's default).
	Walltime string
	// JobName is --job-name (default "gpunotes-" and a random suffix). Jobs are found in squeue
	// by this name, so it should be unique to the cluster.
	JobName string
	// ExtraDirectives are more #SBATCH lines, with or without the "#SBATCH " prefix
	// ("--constraint=h100").
	ExtraDirectives []string
	// Prologue are shell lines run before the worker ("module load cuda").
	Prologue []string
	// WorkerArgs are more arguments of `gpunotes cuda-worker` ("--memory-limit", "32GiB").
	WorkerArgs []string
	// LogDirectory is where jobs write their output (%x-%j.out). Empty: SLURM's default,
	// slurm-%j.out in the directory sbatch ran in.
	LogDirectory string
	// Listen is the scheduler's listen address (default "127.0.0.1:0": loopback, which only
	// jobs on this machine can reach). Use "0.0.0.0:0" or an interface's address for compute
	// nodes.
	Listen string
	// Address is what workers dial (default: the listen address, with an unspecified host
	// replaced by this machine's host name).
	Address string
	// Dashboard is the scheduler's dashboard address (default "127.0.0.1:0"; "off": none, and
	// then Adapt cannot see queued tasks).
	Dashboard string
	// TLS puts the scheduler and the workers under TLS (see cluster.TLSFiles): the scheduler
	// uses the files, and the job script passes them to `gpunotes cuda-worker` as --tls-cert,
	// --tls-key and --tls-ca, so they must be readable at the same paths on the compute nodes
	// (a shared file system). The scheduler's certificate must name the host of Address.
	TLS cluster.TLSFiles
	// Binary is the gpunotes executable on the compute nodes (default: this executable, which
	// then must be on a file system the nodes share).
	Binary string
	// StartTimeout is how long New waits for the workers of the first Jobs (default 2 min;
	// negative: New does not wait).
	StartTimeout time.Duration
	// AdaptInterval is how often Adapt looks at the load (default 2 s).
	AdaptInterval time.Duration
}

// Cluster is a cluster whose workers are SLURM jobs. It embeds the client of its scheduler,
// so c.Submit, c.Map, c.Gather and Compute(gpuarray.On(c.Client)) work on it directly.
type Cluster struct {
	*cluster.Client
	opts    Options
	name    string
	token   string
	addr    string // what workers dial
	listen  string // where the scheduler listens
	dash    string
	cmds    commands
	cancel  context.CancelFunc
	stopped chan error

	logMu sync.Mutex
	logs  []string // the scheduler's last log lines

	mu        sync.Mutex
	jobs      map[string]*Job
	order     []string // job ids in submission order
	adaptStop context.CancelFunc
	adaptDone chan struct{}
	adaptMin  int
	adaptMax  int
	adaptErr  error
	closed    bool
}

// New starts a scheduler in this process, submits Options.Jobs worker jobs and waits until
// their workers have joined (see StartTimeout).
func New(opts Options) (*Cluster, error) {
	if opts.GPUsPerJob < 0 || opts.WorkersPerJob < 0 || opts.CPUsPerJob < 0 || opts.Jobs < 0 {
		return nil, errors.New("slurm: GPUsPerJob, WorkersPerJob, CPUsPerJob and Jobs must not be negative")
	}
	c := &Cluster{opts: opts, jobs: map[string]*Job{}, name: opts.JobName}
	if c.name == "" {
		b := make([]byte, 4)
		_, _ = rand.Read(b)
		c.name = "gpunotes-" + hex.EncodeToString(b)
	}
	if strings.ContainsAny(c.name, " \t\n'\"$\\") {
		return nil, fmt.Errorf("slurm: JobName %q: spaces, quotes, $ and \\ are not allowed", c.name)
	}
	if c.opts.Binary == "" {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("slurm: locate the gpunotes binary: %w", err)
		}
		c.opts.Binary = exe
	}
	if !filepath.IsAbs(c.opts.Binary) && strings.ContainsRune(c.opts.Binary, '/') {
		abs, err := filepath.Abs(c.opts.Binary)
		if err != nil {
			return nil, fmt.Errorf("slurm: Binary: %w", err)
		}
		c.opts.Binary = abs
	}
	for _, p := range []*string{&c.opts.TLS.Cert, &c.opts.TLS.Key, &c.opts.TLS.CA} {
		if *p == "" {
			continue
		}
		abs, err := filepath.Abs(*p)
		if err != nil {
			return nil, fmt.Errorf("slurm: TLS file: %w", err)
		}
		*p = abs
	}
	if _, err := exec.LookPath("sbatch"); err != nil {
		return nil, fmt.Errorf("slurm: %w (is this a SLURM login node? SLURM's client commands must be installed and in PATH)", ErrNoSbatch)
	}
	tok := make([]byte, 24)
	if _, err := rand.Read(tok); err != nil {
		return nil, fmt.Errorf("slurm: token: %w", err)
	}
	c.token = hex.EncodeToString(tok)
	c.cmds.env = append(os.Environ(), "GPUNOTES_CLUSTER_TOKEN="+c.token)
	if err := c.startScheduler(); err != nil {
		return nil, err
	}
	if opts.Jobs > 0 {
		if err := c.ScaleJobs(opts.Jobs); err != nil {
			_ = c.Close()
			return nil, err
		}
		if opts.StartTimeout >= 0 {
			timeout := opts.StartTimeout
			if timeout == 0 {
				timeout = 2 * time.Minute
			}
			ctx, cancel := context.WithTimeout(display.Context(), timeout)
			err := c.WaitForWorkersContext(ctx, opts.Jobs*c.workersPerJob())
			cancel()
			if err != nil {
				_ = c.Close()
				return nil, err
			}
		}
	}
	return c, nil
}

// startScheduler runs cluster.ServeScheduler in this process and connects the client.
func (c *Cluster) startScheduler() error {
	listen := c.opts.Listen
	if listen == "" {
		listen = "127.0.0.1:0"
	}
	listen = strings.TrimPrefix(listen, "tcp://")
	dash := c.opts.Dashboard
	if dash == "" {
		dash = "127.0.0.1:0"
	}
	ctx, cancel := context.WithCancel(context.Background())
	ready := make(chan [2]string, 1)
	c.stopped = make(chan error, 1)
	go func() {
		c.stopped <- cluster.ServeScheduler(ctx, cluster.SchedulerConfig{
			Listen: listen, Token: c.token, Dashboard: dash, Logf: c.logf, TLS: c.opts.TLS,
			Ready: func(addr, dash string) { ready <- [2]string{addr, dash} },
		})
	}()
	select {
	case r := <-ready:
		c.listen, c.dash = r[0], r[1]
	case err := <-c.stopped:
		cancel()
		return fmt.Errorf("slurm: start the scheduler: %w", err)
	}
	c.cancel = cancel
	c.addr = c.opts.Address
	if c.addr == "" {
		c.addr = contactAddress(c.listen)
	}
	if !strings.HasPrefix(c.addr, "tcp://") {
		c.addr = "tcp://" + c.addr
	}
	var tlsCfg *tls.Config
	if c.opts.TLS.Enabled() {
		var err error
		if tlsCfg, err = c.opts.TLS.ClientConfig(); err != nil {
			c.stopScheduler()
			return fmt.Errorf("slurm: %w", err)
		}
		// The listen address may be unspecified (0.0.0.0): verify the name workers dial.
		host, _, _ := net.SplitHostPort(strings.TrimPrefix(c.addr, "tcp://"))
		tlsCfg.ServerName = host
	}
	cl, err := cluster.ConnectTLS(c.listen, c.token, tlsCfg)
	if err != nil {
		c.stopScheduler()
		return fmt.Errorf("slurm: %w", err)
	}
	c.Client = cl
	return nil
}

func (c *Cluster) stopScheduler() {
	c.cancel()
	select {
	case <-c.stopped:
	case <-time.After(10 * time.Second):
	}
}

// contactAddress turns a listen address into one other machines can dial: an unspecified
// host (0.0.0.0, ::) becomes this machine's host name.
func contactAddress(listen string) string {
	hp := strings.TrimPrefix(listen, "tcp://")
	host, port, err := net.SplitHostPort(hp)
	if err != nil {
		return listen
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		if h, err := os.Hostname(); err == nil && h != "" {
			host = h
		}
	}
	return "tcp://" + net.JoinHostPort(host, port)
}

func (c *Cluster) logf(format string, args ...any) {
	line := time.Now().Format("15:04:05 ") + fmt.Sprintf(format, args...)
	c.logMu.Lock()
	defer c.logMu.Unlock()
	c.logs = append(c.logs, line)
	if len(c.logs) > 50 {
		c.logs = c.logs[len(c.logs)-50:]
	}
}

// SchedulerLog returns the scheduler's last log lines: workers joining and leaving, refused
// connections (a wrong token) with their remote addresses.
func (c *Cluster) SchedulerLog() []string {
	c.logMu.Lock()
	defer c.logMu.Unlock()
	return append([]string(nil), c.logs...)
}

// Address is the scheduler address the workers dial.
func (c *Cluster) Address() string { return c.addr }

// Listen is the address the scheduler listens on.
func (c *Cluster) Listen() string { return c.listen }

// Dashboard is the dashboard's URL ("" when off).
func (c *Cluster) Dashboard() string { return c.dash }

// Name is the jobs' --job-name.
func (c *Cluster) Name() string { return c.name }

// Token is the cluster's token, for workers started by hand (`GPUNOTES_CLUSTER_TOKEN=T
// gpunotes cuda-worker ADDR`) or other clients (cluster.Connect).
func (c *Cluster) Token() string { return c.token }

func (c *Cluster) workersPerJob() int {
	if c.opts.GPUsPerJob > 0 {
		return c.opts.GPUsPerJob
	}
	if c.opts.WorkersPerJob > 0 {
		return c.opts.WorkersPerJob
	}
	return 1
}

// shellQuote quotes s for a POSIX shell.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=,@%+", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// JobScript is the batch script every worker job runs, as sbatch gets it. The token is not
// in it: sbatch exports it to the job from the environment (GPUNOTES_CLUSTER_TOKEN).
func (c *Cluster) JobScript() string {
	o := c.opts
	var b strings.Builder
	b.WriteString("#!/usr/bin/env bash\n")
	d := func(format string, args ...any) { fmt.Fprintf(&b, "#SBATCH "+format+"\n", args...) }
	d("--job-name=%s", c.name)
	if o.Partition != "" {
		d("--partition=%s", o.Partition)
	}
	if o.Account != "" {
		d("--account=%s", o.Account)
	}
	if o.QOS != "" {
		d("--qos=%s", o.QOS)
	}
	d("--nodes=1")
	d("--ntasks=1")
	if o.CPUsPerJob > 0 {
		d("--cpus-per-task=%d", o.CPUsPerJob)
	}
	if o.GPUsPerJob > 0 {
		d("--gres=gpu:%d", o.GPUsPerJob)
	}
	if o.Memory != "" {
		d("--mem=%s", o.Memory)
	}
	if o.Walltime != "" {
		d("--time=%s", o.Walltime)
	}
	if o.LogDirectory != "" {
		d("--output=%s", filepath.Join(o.LogDirectory, "%x-%j.out"))
	}
	for _, e := range o.ExtraDirectives {
		e = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(e), "#SBATCH"))
		if e != "" {
			d("%s", e)
		}
	}
	b.WriteString("\n# The token reaches the job in GPUNOTES_CLUSTER_TOKEN: sbatch --export=ALL exports it from\n")
	b.WriteString("# the notebook's environment, so it is in neither this script nor a command line.\n")
	for _, p := range o.Prologue {
		b.WriteString(p + "\n")
	}
	args := []string{shellQuote(o.Binary), "cuda-worker", shellQuote(c.addr),
		`--name-prefix "` + c.name + `-${SLURM_JOB_ID}"`}
	if o.GPUsPerJob > 0 {
		args = append(args, "--nworkers", strconv.Itoa(o.GPUsPerJob))
	} else {
		args = append(args, "--cpu", "--nworkers", strconv.Itoa(c.workersPerJob()))
	}
	for _, a := range o.TLS.Args() {
		args = append(args, shellQuote(a))
	}
	for _, a := range o.WorkerArgs {
		args = append(args, shellQuote(a))
	}
	b.WriteString("exec " + strings.Join(args, " ") + "\n")
	return b.String()
}

// jobOfWorker returns the job id in a worker's name (NAME-JOBID-gpuN), or "".
func (c *Cluster) jobOfWorker(worker string) string {
	rest, ok := strings.CutPrefix(worker, c.name+"-")
	if !ok {
		return ""
	}
	id, _, _ := strings.Cut(rest, "-")
	return id
}

// Refresh asks squeue for the jobs' states.
func (c *Cluster) Refresh(ctx context.Context) error {
	ctx = ctxOr(ctx)
	q, err := c.cmds.queue(ctx, c.name)
	if err != nil {
		return fmt.Errorf("slurm: %w", err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for id, j := range c.jobs {
		if nj, ok := q[id]; ok {
			j.State, j.Nodes, j.Reason = nj.State, nj.Nodes, nj.Reason
		} else if !terminal(j.State) {
			j.State, j.Reason = "ENDED", "no longer in squeue"
		}
	}
	return nil
}

// Jobs returns the jobs this cluster submitted, in submission order, as squeue last showed
// them (call Refresh first for fresh states).
func (c *Cluster) Jobs() []Job {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]Job, 0, len(c.order))
	for _, id := range c.order {
		out = append(out, *c.jobs[id])
	}
	return out
}

// activeLocked returns the jobs not cancelled and not over, in submission order.
func (c *Cluster) activeLocked() []*Job {
	var out []*Job
	for _, id := range c.order {
		if j := c.jobs[id]; !j.Cancelled && !terminal(j.State) {
			out = append(out, j)
		}
	}
	return out
}

// Scale asks for n workers: it submits or cancels jobs until their workers number n,
// rounded up to whole jobs. It stops Adapt.
func (c *Cluster) Scale(n int) error {
	c.StopAdapt()
	if n < 0 {
		return fmt.Errorf("slurm: Scale(%d): want a number of workers >= 0", n)
	}
	per := c.workersPerJob()
	return c.scaleJobs(display.Context(), (n+per-1)/per, false)
}

// ScaleJobs asks for n jobs (each runs GPUsPerJob or WorkersPerJob workers). It stops Adapt.
func (c *Cluster) ScaleJobs(n int) error {
	c.StopAdapt()
	if n < 0 {
		return fmt.Errorf("slurm: ScaleJobs(%d): want a number of jobs >= 0", n)
	}
	return c.scaleJobs(display.Context(), n, false)
}

// scaleJobs submits or cancels jobs. Jobs to cancel are pending ones first (newest first),
// then running ones whose workers hold no results and run nothing (newest first); unless
// onlyIdle, then any running ones.
func (c *Cluster) scaleJobs(ctx context.Context, n int, onlyIdle bool) error {
	if err := c.Refresh(ctx); err != nil {
		return err
	}
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return errors.New("slurm: the cluster is closed")
	}
	active := c.activeLocked()
	c.mu.Unlock()
	if len(active) < n {
		script := c.JobScript()
		for i := len(active); i < n; i++ {
			id, err := c.cmds.submit(ctx, script)
			if err != nil {
				return fmt.Errorf("slurm: %w", err)
			}
			c.mu.Lock()
			c.jobs[id] = &Job{ID: id, State: "PENDING"}
			c.order = append(c.order, id)
			c.mu.Unlock()
		}
		return nil
	}
	if len(active) == n {
		return nil
	}
	busy := map[string]bool{}
	for _, w := range c.WorkerInfo() {
		if w.Processing > 0 || w.InMemory > 0 {
			busy[c.jobOfWorker(w.Name)] = true
		}
	}
	var victims []*Job
	for pass := 0; pass < 3 && len(active)-len(victims) > n; pass++ {
		for i := len(active) - 1; i >= 0 && len(active)-len(victims) > n; i-- {
			j := active[i]
			pending := j.State == "PENDING"
			ok := (pass == 0 && pending) || (pass == 1 && !pending && !busy[j.ID]) || (pass == 2 && !pending && busy[j.ID] && !onlyIdle)
			if ok {
				victims = append(victims, j)
			}
		}
	}
	ids := make([]string, len(victims))
	for i, j := range victims {
		ids[i] = j.ID
	}
	if err := c.cmds.cancel(ctx, ids); err != nil {
		return fmt.Errorf("slurm: %w", err)
	}
	c.mu.Lock()
	for _, j := range victims {
		j.Cancelled = true
	}
	c.mu.Unlock()
	return nil
}

// WaitForWorkers waits until n workers have joined, at most timeout (0: the running cell's
// context bounds it), as every cluster.Cluster does. When the wait ends first, the error
// names every job that has not started its workers, with its state and the end of its
// output; jobs that ended end the wait at once.
func (c *Cluster) WaitForWorkers(n int, timeout time.Duration) error {
	ctx := display.Context()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return c.WaitForWorkersContext(ctx, n)
}

// Restart is an error on a SLURM cluster: its workers are SLURM jobs, which this process
// cannot restart in place; Scale(0) then Scale(n) submits fresh jobs.
func (c *Cluster) Restart() error {
	return errors.New("slurm: Restart: workers are SLURM jobs, which cannot be restarted in place; " +
		"Scale(0) then Scale(n) cancels them and submits fresh ones")
}

// RestartWorkers is an error on a SLURM cluster, as Restart.
func (c *Cluster) RestartWorkers(names ...string) error {
	return fmt.Errorf("slurm: RestartWorkers(%v): workers are SLURM jobs, which cannot be restarted in place; "+
		"RetireWorkers then Scale(n) replaces them", names)
}

var _ cluster.Cluster = (*Cluster)(nil)

// WaitForWorkersContext is WaitForWorkers bounded by ctx (nil: the running cell's context).
func (c *Cluster) WaitForWorkersContext(ctx context.Context, n int) error {
	ctx = ctxOr(ctx)
	start := time.Now()
	lastRefresh := time.Time{}
	for {
		ws := c.WorkerInfo()
		if len(ws) >= n {
			c.markJoined(ws)
			return nil
		}
		if time.Since(lastRefresh) >= time.Second {
			if err := c.Refresh(ctx); err != nil && ctx.Err() == nil {
				return err
			}
			lastRefresh = time.Now()
			c.mu.Lock()
			live := len(c.activeLocked())
			c.mu.Unlock()
			if live*c.workersPerJob() < n-len(ws)+c.joinedActive(ws) {
				return fmt.Errorf("slurm: waiting for %d workers, %d joined: %s", n, len(ws), c.waitReport(ws))
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("slurm: %d of %d workers joined within %v (%v): %s", len(ws), n,
				time.Since(start).Round(time.Second), ctx.Err(), c.waitReport(ws))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// markJoined records that the jobs of joined workers run, so that Jobs does not show a
// job PENDING (squeue's last word) after its worker has dialed in.
func (c *Cluster) markJoined(ws []cluster.WorkerInfo) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range ws {
		if j := c.jobs[c.jobOfWorker(w.Name)]; j != nil && j.State == "PENDING" {
			j.State, j.Reason = "RUNNING", ""
		}
	}
}

// joinedActive counts the workers that belong to active jobs.
func (c *Cluster) joinedActive(ws []cluster.WorkerInfo) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	n := 0
	for _, w := range ws {
		if j := c.jobs[c.jobOfWorker(w.Name)]; j != nil && !j.Cancelled && !terminal(j.State) {
			n++
		}
	}
	return n
}

// waitReport describes the jobs without (all) their workers, for timeouts.
func (c *Cluster) waitReport(ws []cluster.WorkerInfo) string {
	joined := map[string]int{}
	for _, w := range ws {
		joined[c.jobOfWorker(w.Name)]++
	}
	var parts []string
	for _, j := range c.Jobs() {
		if j.Cancelled || joined[j.ID] >= c.workersPerJob() {
			continue
		}
		p := j.describe()
		if terminal(j.State) {
			p += " ended before its workers joined"
		} else if j.State == "RUNNING" {
			p += fmt.Sprintf(" is running, %d of %d workers joined", joined[j.ID], c.workersPerJob())
		} else {
			p += " has not started"
		}
		if out := c.jobOutput(j.ID); out != "" {
			p += "; its output ends: " + out
		}
		parts = append(parts, p)
	}
	if refused := c.refusals(); refused != "" {
		parts = append(parts, "the scheduler refused: "+refused)
	}
	if len(parts) == 0 {
		return "no worker job is queued (call Scale)"
	}
	return strings.Join(parts, "; ")
}

// refusals returns the scheduler's last log lines about refused connections.
func (c *Cluster) refusals() string {
	var out []string
	for _, l := range c.SchedulerLog() {
		if strings.Contains(l, "refused") {
			out = append(out, l)
		}
	}
	if len(out) > 3 {
		out = out[len(out)-3:]
	}
	return strings.Join(out, " | ")
}

// LogFile is where job id writes its output.
func (c *Cluster) LogFile(id string) string {
	if c.opts.LogDirectory != "" {
		return filepath.Join(c.opts.LogDirectory, c.name+"-"+id+".out")
	}
	return "slurm-" + id + ".out"
}

// jobOutput returns the last lines of a job's output file, if this machine can read it.
func (c *Cluster) jobOutput(id string) string {
	b, err := os.ReadFile(c.LogFile(id))
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) > 4 {
		lines = lines[len(lines)-4:]
	}
	return strings.Join(lines, " | ")
}

// Adapt scales between min and max workers with the load: enough workers for the tasks
// waiting and running (one per thread), at least min; idle jobs are cancelled after three
// looks in a row found them surplus. Scale, ScaleJobs and Close stop it.
func (c *Cluster) Adapt(min, max int) error {
	if min < 0 || max < min || max == 0 {
		return fmt.Errorf("slurm: Adapt(%d, %d): want 0 <= min <= max, max > 0", min, max)
	}
	if c.dash == "" {
		return errors.New("slurm: Adapt needs the scheduler's dashboard (Options.Dashboard is off) to see queued tasks")
	}
	c.StopAdapt()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		cancel()
		return errors.New("slurm: the cluster is closed")
	}
	c.adaptStop, c.adaptDone, c.adaptMin, c.adaptMax, c.adaptErr = cancel, done, min, max, nil
	c.mu.Unlock()
	interval := c.opts.AdaptInterval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	go func() {
		defer close(done)
		surplus := 0
		for {
			err := c.adaptOnce(ctx, min, max, &surplus)
			c.mu.Lock()
			c.adaptErr = err
			c.mu.Unlock()
			select {
			case <-ctx.Done():
				return
			case <-time.After(interval):
			}
		}
	}()
	return nil
}

// adaptOnce looks at the load once and scales.
func (c *Cluster) adaptOnce(ctx context.Context, min, max int, surplus *int) error {
	st, err := c.state(ctx)
	if err != nil {
		return err
	}
	threads := 1
	if len(st.Workers) > 0 && st.Threads > 0 {
		threads = (st.Threads + len(st.Workers) - 1) / len(st.Workers)
	}
	want := (st.Tasks[cluster.StateWaiting] + st.Tasks[cluster.StateProcessing] + threads - 1) / threads
	want = clamp(want, min, max)
	per := c.workersPerJob()
	wantJobs := (want + per - 1) / per
	c.mu.Lock()
	have := len(c.activeLocked())
	c.mu.Unlock()
	switch {
	case wantJobs > have:
		*surplus = 0
		return c.scaleJobs(ctx, wantJobs, true)
	case wantJobs < have:
		*surplus++
		if *surplus >= 3 {
			*surplus = 0
			return c.scaleJobs(ctx, wantJobs, true)
		}
	default:
		*surplus = 0
	}
	return nil
}

func clamp(v, lo, hi int) int {
	if v < lo {
		return lo
	}
	if v > hi {
		return hi
	}
	return v
}

// state reads the scheduler's dashboard state (task counts by state).
func (c *Cluster) state(ctx context.Context) (*cluster.DashboardState, error) {
	u := strings.TrimSuffix(c.dash, "/")
	if i := strings.IndexByte(u, '?'); i >= 0 {
		u = u[:i]
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(u, "/")+"/api/state?token="+c.token, nil)
	if err != nil {
		return nil, fmt.Errorf("slurm: scheduler state: %w", err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, fmt.Errorf("slurm: scheduler state: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("slurm: scheduler state: %s", resp.Status)
	}
	var st cluster.DashboardState
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("slurm: scheduler state: %w", err)
	}
	return &st, nil
}

// StopAdapt stops Adapt (the jobs stay as they are).
func (c *Cluster) StopAdapt() {
	c.mu.Lock()
	stop, done := c.adaptStop, c.adaptDone
	c.adaptStop, c.adaptDone = nil, nil
	c.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// Close cancels every job (scancel), waits until squeue shows none of them pending or
// running (at most a minute), and stops the scheduler.
func (c *Cluster) Close() error {
	c.StopAdapt()
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	var ids []string
	for _, id := range c.order {
		if j := c.jobs[id]; !terminal(j.State) || j.State == "COMPLETING" {
			ids = append(ids, id)
			j.Cancelled = true
		}
	}
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var errs []error
	if err := c.cmds.cancel(ctx, ids); err != nil {
		errs = append(errs, err)
	}
	for len(ids) > 0 {
		q, err := c.cmds.queue(ctx, c.name)
		if err != nil {
			errs = append(errs, err)
			break
		}
		var left []string
		for _, j := range q {
			if !terminal(j.State) || j.State == "COMPLETING" {
				left = append(left, j.ID)
			}
		}
		if len(left) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			sort.Strings(left)
			errs = append(errs, fmt.Errorf("jobs %s still in squeue a minute after scancel", strings.Join(left, ",")))
			ids = nil
		case <-time.After(250 * time.Millisecond):
		}
	}
	_ = c.Refresh(ctx)
	if c.Client != nil {
		_ = c.Client.Close()
	}
	c.stopScheduler()
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("slurm: close: %w", err)
	}
	return nil
}

// ctxOr returns ctx, or the running cell's context when ctx is nil.
func ctxOr(ctx context.Context) context.Context {
	if ctx == nil {
		return display.Context()
	}
	return ctx
}
