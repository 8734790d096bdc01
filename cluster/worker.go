package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"
	"unsafe"

	"github.com/gpunotes/gpunotes/cluster/gpuinfo"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
)

// Evaluator runs shipped source on a worker. Call evaluates src once (implementations cache it
// by hash), then calls the function named fn with args, converting each argument to the
// parameter's type. When fn's last result is an error, a non-nil one is returned as err and the
// error is left out of the results. cmd_cluster.go fills it with a Go interpreter.
type Evaluator interface {
	Call(ctx context.Context, src, fn string, args []any) ([]any, error)
}

// ChunkExecutor runs one planned gpuarray chunk task on a worker: spec is the encoded task,
// inputs the values of the tasks it reads, onGPU whether the worker has a GPU.
type ChunkExecutor func(ctx context.Context, spec []byte, inputs []any, onGPU bool) (any, error)

var (
	chunkMu  sync.RWMutex
	chunkRun ChunkExecutor
)

// SetChunkExecutor installs what workers use to run gpuarray chunk tasks.
func SetChunkExecutor(f ChunkExecutor) {
	chunkMu.Lock()
	defer chunkMu.Unlock()
	chunkRun = f
}

// gpuWarm prepares a GPU worker's device (its CUDA context, stream and memory pool); a GPU
// worker starts it in the background as it joins, so that its first chunk task does not pay
// for it. Set with the chunk executor (array.go).
var gpuWarm func()

// WorkerConfig configures RunWorker; the flags of `gpunotes worker` map onto it.
type WorkerConfig struct {
	Scheduler         string // "tcp://host:port" or "host:port"
	Token             string // the scheduler's shared token
	Name              string // stable across restarts; defaults to the host name and PID
	NThreads          int    // tasks run at once (default 1)
	MemoryLimit       uint64 // host bytes for results before spilling to disk (0: no limit)
	DeviceMemoryLimit uint64 // GPU bytes this worker may use (0: no limit)
	GPU               string // UUID of the worker's GPU or MIG instance ("" for CPU only)
	GPUName           string
	GPULabel          string
	LocalDirectory    string // where spilled results go (default: the temp dir)
	Resources         map[string]float64
	CPUs              []int // CPU affinity (empty: leave as is)
	// Reconnect, when positive, keeps the worker alive when the scheduler goes away: it dials
	// again, waiting at most Reconnect between attempts, until ctx ends or the scheduler tells
	// it to close. Zero: the worker exits when the connection drops (local clusters).
	Reconnect time.Duration
	// Heartbeat is how long the scheduler may stay silent before the connection counts as
	// lost (default 10 s; the scheduler pings every second).
	Heartbeat time.Duration
	// DataListen is where the worker serves results to its peers (default: the local address
	// of its scheduler connection, port chosen by the system).
	DataListen string
	// TLS, when set, puts the worker's connections under TLS: to the scheduler (verified
	// against TLS.CA, presenting TLS.Cert) and its data port (served and fetched with the same
	// files). A certificate the other side rejects ends RunWorker with ErrRefused.
	TLS TLSFiles
	// Logf, when set, receives the worker's connection events.
	Logf func(format string, args ...any)
}

// ErrRefused is wrapped by RunWorker's error when the scheduler refused the worker (a wrong
// token or protocol version): retrying does not help.
var ErrRefused = errors.New("refused by the scheduler")

// RunWorker connects to a scheduler and runs tasks until the scheduler says close, the
// connection drops (unless cfg.Reconnect is set), or ctx ends.
func RunWorker(ctx context.Context, cfg WorkerConfig, ev Evaluator) error {
	if cfg.NThreads < 1 {
		cfg.NThreads = 1
	}
	if cfg.Heartbeat <= 0 {
		cfg.Heartbeat = 10 * time.Second
	}
	if cfg.Name == "" {
		host, _ := os.Hostname()
		cfg.Name = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	if len(cfg.CPUs) > 0 {
		if err := setAffinity(cfg.CPUs); err != nil {
			fmt.Fprintf(os.Stderr, "worker %s: %v\n", cfg.Name, err)
		}
	}
	if cfg.GPU != "" && gpuWarm != nil {
		go gpuWarm()
	}

	var sec *workerTLS
	if cfg.TLS.Enabled() {
		sec = &workerTLS{}
		var err error
		if sec.sched, err = cfg.TLS.ClientConfig(); err != nil {
			return fmt.Errorf("worker %s: %w: %w", cfg.Name, ErrRefused, err)
		}
		if sec.serve, sec.fetch, err = cfg.TLS.peerConfigs(); err != nil {
			return fmt.Errorf("worker %s: %w: %w (they also secure its data port)", cfg.Name, ErrRefused, err)
		}
	}
	wait := 100 * time.Millisecond
	for {
		closed, joined, err := runSession(ctx, cfg, sec, ev)
		if closed || ctx.Err() != nil {
			return nil
		}
		if cfg.Reconnect <= 0 || errors.Is(err, ErrRefused) {
			return err
		}
		if joined {
			wait = 100 * time.Millisecond
		}
		cfg.Logf("worker %s: %v; reconnecting in %v", cfg.Name, err, wait)
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(wait):
		}
		wait = min(2*wait, cfg.Reconnect)
	}
}

// runSession is one connection to the scheduler: closed reports that the scheduler said close,
// joined that it welcomed the worker.
func runSession(ctx context.Context, cfg WorkerConfig, sec *workerTLS, ev Evaluator) (closed, joined bool, err error) {
	addr := strings.TrimPrefix(cfg.Scheduler, "tcp://")
	d := net.Dialer{Timeout: 10 * time.Second}
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return false, false, fmt.Errorf("connect to scheduler: %w", err)
	}
	if sec != nil {
		if c, err = tlsHandshake(c, sec.sched, addr, 10*time.Second); err != nil {
			if isTLSRefusal(err) {
				err = fmt.Errorf("%w: %w", ErrRefused, err)
			}
			return false, false, fmt.Errorf("connect to scheduler: %w", err)
		}
	}
	if err := authDialer(c, cfg.Token, roleWorker); err != nil {
		_ = c.Close()
		if sec != nil && isTLSRefusal(err) {
			// TLS 1.3: the scheduler's verdict on this worker's certificate comes after the
			// handshake, as an alert on the first read.
			return false, false, fmt.Errorf("worker %s: %w: %w", cfg.Name, ErrRefused, tlsExplain(err))
		}
		// An impostor is not ErrRefused: the real scheduler may come back on that port.
		return false, false, fmt.Errorf("worker %s: scheduler %s: %w", cfg.Name, addr, err)
	}
	dataAddr := cfg.DataListen
	if dataAddr == "" {
		host, _, _ := net.SplitHostPort(c.LocalAddr().String())
		dataAddr = net.JoinHostPort(host, "0")
	}
	dln, err := net.Listen("tcp", dataAddr)
	if err != nil {
		_ = c.Close()
		return false, false, fmt.Errorf("worker data listener: %w", err)
	}
	defer dln.Close()
	l := newLink(c)
	host, _ := os.Hostname()
	res := map[string]float64{"CPU": float64(cfg.NThreads)}
	if cfg.GPU != "" {
		res["GPU"] = 1
	}
	for k, v := range cfg.Resources {
		res[k] = v
	}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	err = l.send(&frame{Op: "hello", Hello: &hello{
		Version: protoVersion, Role: "worker", DataAddr: dln.Addr().String(),
		Name: cfg.Name, PID: os.Getpid(), Host: host,
		NThreads: cfg.NThreads, MemoryLimit: cfg.MemoryLimit, DeviceMemoryLimit: cfg.DeviceMemoryLimit,
		GPU: cfg.GPU, GPUName: cfg.GPUName, GPULabel: cfg.GPULabel, Resources: res,
	}})
	if err != nil {
		_ = l.close()
		return false, false, fmt.Errorf("worker hello: %w", err)
	}
	f, err := l.recv()
	if err != nil {
		_ = l.close()
		if sec != nil && isTLSRefusal(err) {
			// TLS 1.3: the scheduler's verdict on this worker's certificate comes after the
			// handshake, as an alert on the first read.
			return false, false, fmt.Errorf("worker hello: %w: %w", ErrRefused, tlsExplain(err))
		}
		return false, false, fmt.Errorf("worker hello: %w", err)
	}
	if f.Op != "welcome" {
		_ = l.close()
		return false, false, fmt.Errorf("worker %s: %w: %s", cfg.Name, ErrRefused, f.Err)
	}
	_ = c.SetDeadline(time.Time{})
	cfg.Logf("worker %s: joined scheduler %s (data at %s)", cfg.Name, addr, dln.Addr())
	w := &worker{
		cfg: cfg, sec: sec, ev: ev, l: l, running: map[string]context.CancelFunc{},
		spillDir: workerSpillDir(cfg.LocalDirectory, cfg.Name, os.Getpid()),
		start:    time.Now(),
	}
	w.logs = newLogRing(cfg.Name)
	logf := cfg.Logf
	w.cfg.Logf = func(format string, args ...any) {
		w.logs.printf(format, args...)
		logf(format, args...)
	}
	w.store = newWorkerStore(w.cfg, w.spillDir)
	w.mem = &memTuner{limit: w.cfg.MemoryLimit}
	if w.mem.limited() {
		dropImagePages()
	}
	w.mem.tune(w.store)
	defer tuneGCFor(w.store)()
	w.store.logf = func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		w.logs.printf("warning: %s", msg)
		fmt.Fprintf(os.Stderr, "gpunotes worker %s: warning: %s\n", cfg.Name, msg)
	}
	w.cond = sync.NewCond(&w.mu)
	defer os.RemoveAll(w.spillDir)
	defer w.store.close()
	if sec != nil {
		go w.serveData(tls.NewListener(dln, sec.serve))
	} else {
		go w.serveData(dln)
	}
	workerSelf.Store(w)
	w.logs.printf("joined scheduler %s (data at %s)", addr, dln.Addr())
	closed, err = w.loop(ctx)
	workerSelf.CompareAndSwap(w, nil)
	w.ctlClose()
	w.runPluginTeardowns()
	return closed, true, err
}

// workerSpillDir is where the worker of that name and process ID spills results and shuffle
// shards, under dir (default: the temp dir). Its nanny removes it when the process ends, however
// it ended.
func workerSpillDir(dir, name string, pid int) string {
	if dir == "" {
		dir = os.TempDir()
	}
	return filepath.Join(dir, fmt.Sprintf("gpunotes-worker-%s-%d", sanitize(name), pid))
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '/' || r == os.PathSeparator || r < ' ' {
			return '_'
		}
		return r
	}, s)
}

// workerTLS are a worker's TLS configurations: toward the scheduler, serving its data port,
// and fetching from peers' data ports.
type workerTLS struct{ sched, serve, fetch *tls.Config }

type worker struct {
	cfg      WorkerConfig
	mem      *memTuner  // fits the runtime's and the store's limits to the memory limit
	sec      *workerTLS // nil: plaintext
	ev       Evaluator
	l        *link
	mu       sync.Mutex
	cond     *sync.Cond
	queue    []*taskMsg
	running  map[string]context.CancelFunc
	store    *store
	done     int64
	erred    int64
	closing  bool
	spillDir string
	start    time.Time
	ctl      workerCtl
	logs     *logRing
	// pluginMu guards teardowns: the plugins set up here, run again as the worker leaves.
	pluginMu  sync.Mutex
	teardowns []pluginSpec
	shuf      shuffleState
}

func (w *worker) loop(ctx context.Context) (closed bool, result error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for i := 0; i < w.cfg.NThreads; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.runner(ctx)
		}()
	}
	go w.reportStats(ctx)
	go func() {
		<-ctx.Done()
		_ = w.l.close()
	}()
	for {
		_ = w.l.c.SetReadDeadline(time.Now().Add(w.cfg.Heartbeat))
		f, err := w.l.recv()
		if err != nil {
			if ctx.Err() == nil {
				result = fmt.Errorf("scheduler connection lost: %w", err)
			}
			break
		}
		if f.Op == "close" {
			closed = true
			break
		}
		w.handle(f)
	}
	w.mu.Lock()
	w.closing = true
	for _, c := range w.running {
		c()
	}
	w.cond.Broadcast()
	w.mu.Unlock()
	cancel()
	_ = w.l.close()
	// Running tasks were cancelled; interpreted code may not notice, so do not wait long.
	stopped := make(chan struct{})
	go func() {
		wg.Wait()
		close(stopped)
	}()
	select {
	case <-stopped:
	case <-time.After(200 * time.Millisecond):
	}
	return closed, result
}

func (w *worker) handle(f *frame) {
	switch f.Op {
	case "task":
		w.mu.Lock()
		w.queue = append(w.queue, f.Task)
		w.cond.Signal()
		w.mu.Unlock()
	case "get":
		b, err := w.load(f.Key)
		r := &frame{Op: "data", ReqID: f.ReqID, Key: f.Key, Blob: b}
		if err != nil {
			r.Err = err.Error()
		}
		_ = w.l.send(r)
	case "release":
		for _, k := range f.Keys {
			w.store.drop(k)
		}
	case "ctlr":
		w.ctlAnswer(f)
	case "pull":
		go w.pull(f)
	case "run":
		go w.runFunc(f)
	case "logs":
		n := 100
		if f.Ctl != nil && f.Ctl.N > 0 {
			n = f.Ctl.N
		}
		_ = w.l.send(&frame{Op: "logs", ReqID: f.ReqID, Keys: w.logs.lines(n)})
	case "cancel":
		w.mu.Lock()
		if c := w.running[f.Key]; c != nil {
			c()
		}
		for i, t := range w.queue {
			if t.Key == f.Key {
				w.queue = append(w.queue[:i], w.queue[i+1:]...)
				w.mu.Unlock()
				_ = w.l.send(&frame{Op: "erred", Key: f.Key, Err: "cancelled"})
				return
			}
		}
		w.mu.Unlock()
	case "steal":
		w.mu.Lock()
		for i, t := range w.queue {
			if t.Key == f.Key {
				w.queue = append(w.queue[:i], w.queue[i+1:]...)
				w.mu.Unlock()
				_ = w.l.send(&frame{Op: "stolen", Key: f.Key})
				return
			}
		}
		w.mu.Unlock()
		_ = w.l.send(&frame{Op: "notstolen", Key: f.Key})
	}
}

func (w *worker) load(k string) (*blob, error) { return w.store.blob(k) }

func (w *worker) runner(ctx context.Context) {
	for {
		w.mu.Lock()
		for len(w.queue) == 0 && !w.closing {
			w.cond.Wait()
		}
		if w.closing {
			w.mu.Unlock()
			return
		}
		t := w.queue[0]
		w.queue = w.queue[1:]
		tctx, cancel := context.WithCancel(ctx)
		w.running[t.Key] = cancel
		w.mu.Unlock()
		w.runTask(tctx, t)
		cancel()
		w.mu.Lock()
		delete(w.running, t.Key)
		w.mu.Unlock()
	}
}

func (w *worker) runTask(ctx context.Context, t *taskMsg) {
	start := time.Now()
	fetched, missing, ferr := w.fetchInputs(ctx, t)
	fetchDur := time.Since(start)
	if ferr != nil {
		_ = w.l.send(&frame{Op: "missing", Key: t.Key, Keys: missing, Err: ferr.Error()})
		return
	}
	v, trace, err := w.exec(ctx, t)
	stop := time.Now()
	if err == nil && ctx.Err() != nil {
		err = fmt.Errorf("cancelled: %w", ctx.Err())
	}
	if err != nil {
		w.mu.Lock()
		w.erred++
		w.mu.Unlock()
		_ = w.l.send(&frame{Op: "erred", Key: t.Key, Err: err.Error(), Trace: trace,
			Start: start.UnixNano(), Stop: stop.UnixNano()})
		return
	}
	var size uint64
	typ := fmt.Sprintf("%T", v)
	note := hostNote(t, v)
	switch v := v.(type) {
	case devValue:
		size, typ = v.Bytes(), "[]*plan.Output"
		w.store.putDev(t.Key, v)
	case *blob: // a kept chunk made in its stored form (a shuffle's unpack)
		size, typ = uint64(len(v.Data)), "[]*plan.Output"
		w.store.putBlob(t.Key, v)
	case *spilledChunk: // the same, written to its spill file
		size, typ = v.size, "[]*plan.Output"
		w.store.putSpilled(t.Key, v)
	default:
		b, err := encodeValue(v)
		if err != nil {
			_ = w.l.send(&frame{Op: "erred", Key: t.Key, Err: fmt.Sprintf("result cannot be sent: %v", err)})
			return
		}
		size = uint64(len(b.Data))
		w.store.putBlob(t.Key, b)
	}
	w.mu.Lock()
	w.done++
	w.mu.Unlock()
	done := &frame{Op: "done", Key: t.Key, Size: int64(size), Type: typ, Fallback: note, Moved: w.store.takeMoves(),
		Start: start.UnixNano(), Stop: stop.UnixNano(), FetchBytes: fetched, FetchNanos: fetchDur.Nanoseconds()}
	switch t.Spec.Kind {
	case kindShuffleTransfer, kindShuffleUnpack, kindShuffleDrop, kindGroupSplit, kindGroupSplitCombine:
		done.ShuffleSent, done.ShuffleReceived = w.shuf.sent.Load(), w.shuf.recv.Load()
	}
	done.HeldPeak = w.store.stats().Peak
	_ = w.l.send(done)
}

// newWorkerStore makes a worker's result store: results in host memory spill to disk beyond
// 60% of its memory limit, as do a GPU worker's device-held results to host memory beyond 60%
// of its device memory limit (the rest is room for the tasks' own buffers).
func newWorkerStore(cfg WorkerConfig, dir string) *store {
	st := newStore(cfg.DeviceMemoryLimit*6/10, cfg.MemoryLimit*6/10, dir)
	st.logf = func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "gpunotes worker %s: warning: "+format+"\n", append([]any{cfg.Name}, args...)...)
	}
	if cfg.GPU != "" {
		st.upload = uploadChunk
	}
	return st
}

// readsInPlace reports whether tasks of a kind only read their inputs' values (and keep no
// reference to them past the task): the shuffle's transfers and the groupby's tasks, which
// then read kept chunks in the store's memory, not copies.
func readsInPlace(kind string) bool {
	switch kind {
	case kindShuffleTransfer, kindGroupPartial, kindGroupCombine, kindGroupSplit:
		return true
	}
	return false
}

// exec runs a task, turning a panic into an error with the worker's stack.
func (w *worker) exec(ctx context.Context, t *taskMsg) (v any, trace string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
			trace = string(debug.Stack())
		}
	}()
	onGPU := w.cfg.GPU != ""
	var unpins []func()
	defer func() {
		for _, f := range unpins {
			f()
		}
	}()
	// resolve returns a dependency's value; a GPU worker's chunk tasks get the device-held
	// ones as they are, to read in place.
	// Tasks that only read their inputs read kept chunks in place.
	readOnly := readsInPlace(t.Spec.Kind)
	resolve := func(ref string) (any, error) {
		if b := t.Deps[ref]; b != nil {
			return decodeBlob(b, readOnly)
		}
		v, done, err := w.store.valueFor(ref, onGPU && t.Spec.Kind == "chunk", readOnly)
		unpins = append(unpins, done)
		return v, err
	}
	switch t.Spec.Kind {
	case "call":
		if w.ev == nil {
			return nil, "", errors.New("this worker has no evaluator for shipped functions")
		}
		args := make([]any, len(t.Spec.Args))
		for i, a := range t.Spec.Args {
			if a.Ref != "" {
				if args[i], err = resolve(a.Ref); err != nil {
					return nil, "", fmt.Errorf("argument %d: %w", i, err)
				}
				continue
			}
			if args[i], err = decodeValue(a.Val); err != nil {
				return nil, "", fmt.Errorf("argument %d: %w", i, err)
			}
		}
		res, trace, err := w.callShipped(ctx, t, args)
		if err != nil {
			return nil, trace, err
		}
		switch len(res) {
		case 0:
			return nil, "", nil
		case 1:
			return res[0], "", nil
		}
		return res, "", nil
	case "blocks":
		// One block of MapBlocks: the arguments are the block's inputs (values, or kept chunks
		// of this or another worker), then its shape; fn gets them as (blocks, shape).
		if w.ev == nil {
			return nil, "", errors.New("this worker has no evaluator for shipped functions")
		}
		n := len(t.Spec.Args) - 1
		if n < 1 {
			return nil, "", fmt.Errorf("a block task has %d arguments, want the inputs and the shape", n+1)
		}
		blocks := make([][]float64, n)
		for i, a := range t.Spec.Args[:n] {
			var v any
			if a.Ref != "" {
				v, err = resolve(a.Ref)
			} else {
				v, err = decodeValue(a.Val)
			}
			if err == nil {
				blocks[i], err = blockValues(v)
			}
			if err != nil {
				return nil, "", fmt.Errorf("array %d: %w", i, err)
			}
		}
		shape, err := decodeValue(t.Spec.Args[n].Val)
		if err != nil {
			return nil, "", fmt.Errorf("shape: %w", err)
		}
		res, trace, err := w.callShipped(ctx, t, []any{blocks, shape})
		if err != nil {
			return nil, trace, err
		}
		if len(res) != 1 {
			return nil, "", fmt.Errorf("%s returned %d values, want one []float64", t.Spec.Func, len(res))
		}
		return res[0], "", nil
	case "value":
		// A scattered value: the task's result is its argument.
		if len(t.Spec.Args) != 1 {
			return nil, "", fmt.Errorf("a scattered value task has %d values, want 1", len(t.Spec.Args))
		}
		v, err := decodeValue(t.Spec.Args[0].Val)
		return v, "", err
	case kindShuffleTransfer, kindShuffleUnpack, kindShuffleDrop:
		v, err := w.shuffleTask(ctx, t, resolve)
		return v, "", err
	case kindGroupPartial, kindGroupCombine:
		v, err := w.groupTask(ctx, t, resolve)
		return v, "", err
	case kindGroupSplit, kindGroupSplitCombine:
		v, err := w.groupSplitTask(ctx, t, resolve)
		return v, "", err
	case kindJoinPairs, kindJoinLen, kindJoinGather:
		v, err := w.joinTask(ctx, t, resolve)
		return v, "", err
	case kindSortSample, kindSortPerm, kindDistinctRows:
		v, err := w.sortTask(ctx, t, resolve)
		return v, "", err
	case "chunk":
		chunkMu.RLock()
		run := chunkRun
		chunkMu.RUnlock()
		if run == nil {
			return nil, "", errors.New("this worker cannot run array chunks (no chunk executor)")
		}
		inputs := make([]any, len(t.Spec.Inputs))
		for i, ref := range t.Spec.Inputs {
			if inputs[i], err = resolve(ref); err != nil {
				return nil, "", fmt.Errorf("input %d: %w", i, err)
			}
		}
		runOnce := func() (any, error) {
			if t.Spec.Keep && onGPU {
				return keepOnDevice(ctx, t.Spec.Chunk, inputs)
			}
			return run(ctx, t.Spec.Chunk, inputs, onGPU)
		}
		v, err := runOnce()
		if onGPU && errors.Is(err, cuda.ErrOutOfMemory) {
			// Kept chunks this task does not read make room in host memory, once.
			if freed := w.store.makeRoom(); freed > 0 {
				w.store.logf("out of GPU memory: %s of kept results moved to host memory; running the task again", formatBytes(freed))
				v, err = runOnce()
			}
		}
		return v, "", err
	}
	return nil, "", fmt.Errorf("unknown task kind %q", t.Spec.Kind)
}

// callShipped calls t's shipped function with args. An interpreted panic's error comes with
// its traceback's lines; an error the function returns as its last result is the call's error.
func (w *worker) callShipped(ctx context.Context, t *taskMsg, args []any) ([]any, string, error) {
	res, err := w.ev.Call(ctx, t.Spec.Source, t.Spec.Func, args)
	if err != nil {
		var tb interface {
			Parts() (string, string, []string)
		}
		if errors.As(err, &tb) {
			_, _, lines := tb.Parts()
			return nil, strings.Join(lines, "\n"), err
		}
		return nil, "", err
	}
	if n := len(res); n > 0 {
		if e, ok := res[n-1].(error); ok {
			return nil, "", e
		}
	}
	return res, "", nil
}

func (w *worker) reportStats(ctx context.Context) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		w.mem.tune(w.store)
		ss := w.store.stats()
		w.mu.Lock()
		st := &workerStats{
			RSS: rss(), Stored: ss.Host, Spilled: ss.Disk, HeldPeak: ss.Peak, Device: ss.Device, Moved: w.store.takeMoves(), Processing: len(w.running) + len(w.queue),
			InMemory: ss.Count, TasksDone: w.done, TasksErred: w.erred,
			Goroutines: runtime.NumGoroutine(), UptimeMillis: time.Since(w.start).Milliseconds(), GPUUtil: -1,
			ShuffleSent: w.shuf.sent.Load(), ShuffleReceived: w.shuf.recv.Load(),
		}
		w.mu.Unlock()
		if w.cfg.GPU != "" {
			if g, err := gpuinfo.StatsOf(w.cfg.GPU); err == nil {
				st.GPUMemUsed, st.GPUMemTotal, st.GPUUtil = g.MemoryUsed, g.MemoryTotal, g.Utilization
			}
		}
		if err := w.l.send(&frame{Op: "stats", Stats: st}); err != nil {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// rss returns this process's resident memory in bytes.
func rss() uint64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, res uint64
	if _, err := fmt.Sscan(string(data), &size, &res); err != nil {
		return 0
	}
	return res * uint64(os.Getpagesize())
}

// setAffinity pins this process to cpus.
func setAffinity(cpus []int) error {
	var mask [16]uint64 // 1024 CPUs
	for _, c := range cpus {
		if c >= 0 && c < 1024 {
			mask[c/64] |= 1 << (uint(c) % 64)
		}
	}
	// The mask is per thread: pin every thread the runtime has started; later threads inherit it.
	tids, err := os.ReadDir("/proc/self/task")
	if err != nil {
		return fmt.Errorf("set CPU affinity %v: %w", cpus, err)
	}
	for _, e := range tids {
		var tid int
		if _, err := fmt.Sscan(e.Name(), &tid); err != nil {
			continue
		}
		_, _, errno := syscall.RawSyscall(syscall.SYS_SCHED_SETAFFINITY, uintptr(tid), uintptr(len(mask)*8), uintptr(unsafe.Pointer(&mask[0])))
		if errno != 0 && errno != syscall.ESRCH {
			return fmt.Errorf("set CPU affinity %v: %w", cpus, errno)
		}
	}
	return nil
}
