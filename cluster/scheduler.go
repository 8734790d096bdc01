package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Task states, as dask.distributed names them.
const (
	StateWaiting    = "waiting"    // inputs not ready, or no worker free
	StateProcessing = "processing" // sent to a worker
	StateMemory     = "memory"     // done; the result is held by a worker
	StateErred      = "erred"      // failed (the error is kept)
	StateCancelled  = "cancelled"  // cancelled by the client
)

// maxMissing is how often a task may fail to fetch its inputs from peers before it errs, and
// missingBackoff how long it waits before it is tried again.
const (
	maxMissing     = 30
	missingBackoff = 500 * time.Millisecond
)

// DefaultRetries is how often a task is retried after the worker running it died.
const DefaultRetries = 3

// errWorkerLost is the cause of failed fetches from a worker that died.
var errWorkerLost = errors.New("worker lost")

// ErrCancelled is returned by Result for a cancelled future.
var ErrCancelled = errors.New("cluster: future cancelled")

// TaskError is a task that failed on a worker: a returned error, a panic, or a worker that
// died more often than the retry limit allows.
type TaskError struct {
	Key       string
	Worker    string
	Message   string
	Traceback string // the worker's stack where the task panicked ("" for returned errors)
}

func (e *TaskError) Error() string {
	msg := fmt.Sprintf("task %s failed on worker %s: %s", e.Key, e.Worker, e.Message)
	if e.Traceback != "" {
		msg += "\nworker traceback:\n" + e.Traceback
	}
	return msg
}

type task struct {
	key        string
	spec       taskSpec
	deps       []*task
	dependents []*task
	restrict   []string
	home       string // the worker to run it on while that one is connected (aligned chunks)
	resources  map[string]float64
	state      string
	worker     *wconn
	sentSeq    uint64
	retries    int
	maxRetries int
	size       int64
	typ        string
	fallback   string // a kept chunk a GPU worker computed on its CPU: why
	tier       string // where its worker keeps the result: "device", "host" or "disk"
	err        error
	changed    chan struct{}
	refs       int  // futures and unfinished dependents holding the result
	forgotten  bool // nobody wants the result any more
	stealing   bool
	queued     bool // in the ready list
	submitted  time.Time
	owner      *cconn   // the remote client that submitted it (nil: an in-process client)
	missing    int      // times a worker could not fetch its inputs from peers
	replicas   []*wconn // further workers holding copies of the result (Replicate)
	priority   int      // higher runs first among ready tasks
	faf        bool     // fire and forget: the scheduler holds a reference until it finishes
}

// notify wakes everyone waiting for t to change; the caller holds the scheduler's lock.
func (t *task) notify() {
	close(t.changed)
	t.changed = make(chan struct{})
	if t.owner != nil {
		t.owner.out.push(stateFrame(t))
	}
}

// finishedFAF drops the scheduler's reference on a fire-and-forget task that finished; the
// caller holds the lock.
func (s *scheduler) finishedFAF(t *task) {
	if t.faf && (t.state == StateMemory || t.state == StateErred || t.state == StateCancelled) {
		t.faf = false
		if !t.forgotten {
			s.unrefLocked(t)
		}
	}
}

type wconn struct {
	info       hello
	addr       string
	dataAddr   string // where peers fetch its results ("" for workers that predate it)
	link       *link
	out        *outbox
	processing map[string]*task
	memory     map[string]*task
	used       map[string]float64
	stats      workerStats
	lastSeen   time.Time
	joined     time.Time
	pending    map[uint64]chan *frame
	gone       bool
	sent       uint64
	id         string // lease holder of its coordination requests
	retiring   bool   // being retired: no new tasks
	restarting bool   // restarted on request: submitted calls it ran or held are dropped
}

func (w *wconn) capacity() int {
	n := w.info.NThreads
	if n < 1 {
		n = 1
	}
	return 2 * n
}

func (w *wconn) fits(res map[string]float64) bool {
	for k, need := range res {
		if w.info.Resources[k]-w.used[k] < need {
			return false
		}
	}
	return true
}

// outbox sends frames to one worker in order from its own goroutine, so the scheduler never
// blocks on the network while holding its lock.
type outbox struct {
	mu     sync.Mutex
	queue  []*frame
	wake   chan struct{}
	closed bool
}

func newOutbox(l *link, onErr func(error)) *outbox {
	o := &outbox{wake: make(chan struct{}, 1)}
	go func() {
		for {
			o.mu.Lock()
			q := o.queue
			o.queue = nil
			closed := o.closed
			o.mu.Unlock()
			for _, f := range q {
				if err := l.send(f); err != nil {
					onErr(err)
					return
				}
			}
			if closed {
				return
			}
			if len(q) == 0 {
				<-o.wake
			}
		}
	}()
	return o
}

func (o *outbox) push(f *frame) {
	o.mu.Lock()
	o.queue = append(o.queue, f)
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

func (o *outbox) close() {
	o.mu.Lock()
	o.closed = true
	o.mu.Unlock()
	select {
	case o.wake <- struct{}{}:
	default:
	}
}

// scheduler tracks workers and tasks. It lives in the kernel process and listens on TCP for
// workers.
type scheduler struct {
	ln    net.Listener
	token string
	// tls, when set, is required of every connection; plaintext ones are refused.
	tls  *tls.Config
	logf func(format string, args ...any)
	// heartbeat is how long a worker may stay silent before it counts as lost.
	heartbeat time.Duration
	clients   map[*cconn]bool
	stream    []TaskEvent // the task stream, oldest first, at most streamLen
	history   map[string][]Sample
	started   time.Time
	dashURL   string
	stopPing  chan struct{}
	mu        sync.Mutex
	workers   map[string]*wconn
	tasks     map[string]*task
	ready     []*task
	seq       uint64
	reqSeq    atomic.Uint64
	closed    bool
	joinCh    chan string // names of workers as they join
	changed   chan struct{}
	done      int64
	erred     int64
	conns     sync.WaitGroup
	deaths    map[string]death
	co        *coord
	datasets  map[string]*dataset
	sources   map[string]string // shipped functions' source by task kind (PerformanceReport)
	plugins   []pluginSpec
	// prioritized is set once a task with a priority was added: ready tasks are then sorted.
	prioritized bool
}

// death records a worker's restarts and why it last died.
type death struct {
	restarts int
	reason   string
	at       time.Time
}

// noteRestart records that the nanny restarted (or gave up on) a worker.
func (s *scheduler) noteRestart(name, reason string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.deaths[name]
	d.restarts++
	d.reason, d.at = reason, time.Now()
	s.deaths[name] = d
	s.stateChanged()
}

func newScheduler(addr, token string, tlsCfg *tls.Config) (*scheduler, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("scheduler listen on %s: %w", addr, err)
	}
	s := &scheduler{
		ln: ln, token: token, tls: tlsCfg,
		workers: map[string]*wconn{}, tasks: map[string]*task{},
		joinCh:    make(chan string, 1024),
		deaths:    map[string]death{},
		changed:   make(chan struct{}),
		logf:      func(string, ...any) {},
		heartbeat: defaultHeartbeat,
		clients:   map[*cconn]bool{},
		history:   map[string][]Sample{},
		started:   time.Now(),
		stopPing:  make(chan struct{}),
		co:        newCoord(),
		sources:   map[string]string{},
		datasets:  map[string]*dataset{},
	}
	go s.accept()
	go s.pingLoop()
	return s, nil
}

// defaultHeartbeat is how long a worker may stay silent (it reports every second) before the
// scheduler drops it and runs its tasks elsewhere.
const defaultHeartbeat = 5 * time.Second

// pingLoop pings every worker and client each second (their read deadlines depend on it) and
// drops workers that have been silent longer than the heartbeat timeout.
func (s *scheduler) pingLoop() {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-s.stopPing:
			return
		case <-tick.C:
		}
		s.mu.Lock()
		for _, w := range s.workers {
			if since := time.Since(w.lastSeen); since > s.heartbeat {
				s.logf("worker %s at %s silent for %v: dropping it", w.info.Name, w.addr, since.Round(time.Millisecond))
				s.lostLocked(w, fmt.Sprintf("silent for %v", since.Round(time.Second)))
				w.out.close()
				_ = w.link.close()
				continue
			}
			w.out.push(&frame{Op: "ping"})
		}
		for cc := range s.clients {
			cc.out.push(&frame{Op: "ping"})
		}
		s.mu.Unlock()
	}
}

// address is the scheduler's "tcp://host:port".
func (s *scheduler) address() string { return "tcp://" + s.ln.Addr().String() }

func (s *scheduler) secure() bool { return s.tls != nil }

func (s *scheduler) accept() {
	for {
		c, err := s.ln.Accept()
		if err != nil {
			return
		}
		if tc, ok := c.(*net.TCPConn); ok {
			_ = tc.SetKeepAlive(true)
			_ = tc.SetKeepAlivePeriod(5 * time.Second)
		}
		s.conns.Add(1)
		go func() {
			defer s.conns.Done()
			s.serveConn(c)
		}()
	}
}

// stateChanged wakes watchers of the scheduler's state; the caller holds the lock.
func (s *scheduler) stateChanged() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// handshake checks how c starts: under TLS it completes the handshake, and it refuses (with a
// log line naming the remote address) plaintext when TLS is required and TLS when it is not.
// It returns the connection to speak on, or nil when c was refused and closed.
func (s *scheduler) handshake(c net.Conn) net.Conn {
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	pc, isTLS, err := sniffTLS(c)
	if err != nil {
		_ = c.Close()
		return nil
	}
	switch {
	case s.tls == nil && isTLS:
		s.logf("refused a TLS connection from %s: this scheduler speaks plaintext (it has no --tls-cert)", c.RemoteAddr())
		_ = c.Close()
		return nil
	case s.tls == nil:
		return pc
	case !isTLS:
		s.logf("refused a plaintext connection from %s: this scheduler requires TLS", c.RemoteAddr())
		refuseNeedTLS(pc)
		_ = pc.Close()
		return nil
	}
	tc := tls.Server(pc, s.tls)
	_ = tc.SetDeadline(time.Now().Add(10 * time.Second))
	if err := tc.Handshake(); err != nil {
		s.logf("refused a TLS connection from %s: %v", c.RemoteAddr(), tlsExplain(err))
		_ = tc.Close()
		return nil
	}
	return tc
}

func (s *scheduler) serveConn(raw net.Conn) {
	c := s.handshake(raw)
	if c == nil {
		return
	}
	// Nothing of variable size is read before the peer proved it knows the token.
	role, err := authListener(c, s.token)
	if err != nil {
		who := "a connection"
		switch role {
		case roleWorker:
			who = "worker"
		case roleClient:
			who = "client"
		}
		s.logf("refused %s from %s: %v", who, c.RemoteAddr(), tlsExplain(err))
		_ = c.Close()
		return
	}
	l := newLink(c)
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	f, err := l.recv()
	if err != nil || f.Op != "hello" || f.Hello == nil {
		_ = l.close()
		return
	}
	h := f.Hello
	if (h.Role == "client") != (role == roleClient) || role == roleData {
		s.logf("refused %s %q from %s: it authenticated as role %q", roleName(h.Role), h.Name, c.RemoteAddr(), role)
		_ = l.close()
		return
	}
	if h.Version != protoVersion {
		s.logf("refused %s %q from %s: protocol version %d, scheduler speaks %d", roleName(h.Role), h.Name, c.RemoteAddr(), h.Version, protoVersion)
		_ = l.send(&frame{Op: "refused", Err: fmt.Sprintf("protocol version %d, scheduler speaks %d", h.Version, protoVersion)})
		_ = l.close()
		return
	}
	if h.Role == "client" {
		_ = c.SetReadDeadline(time.Time{})
		s.serveClient(c, l, h)
		return
	}
	_ = c.SetReadDeadline(time.Time{})
	w := &wconn{
		info: *h, addr: "tcp://" + c.RemoteAddr().String(), link: l, dataAddr: h.DataAddr,
		processing: map[string]*task{}, memory: map[string]*task{}, used: map[string]float64{},
		pending: map[uint64]chan *frame{}, lastSeen: time.Now(), joined: time.Now(),
		id: fmt.Sprintf("worker:%s#%d", h.Name, connSeq.Add(1)),
	}
	if w.info.Resources == nil {
		w.info.Resources = map[string]float64{}
	}
	w.out = newOutbox(l, func(error) { _ = l.close() })
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = l.send(&frame{Op: "refused", Err: "scheduler closed"})
		_ = l.close()
		return
	}
	if old := s.workers[h.Name]; old != nil {
		s.lostLocked(old, "replaced by a new worker of the same name")
	}
	s.workers[h.Name] = w
	s.logf("worker %s joined from %s (%d threads%s)", h.Name, c.RemoteAddr(), h.NThreads, gpuNote(h))
	w.out.push(&frame{Op: "welcome"})
	plugins := append([]pluginSpec(nil), s.plugins...)
	s.scheduleLocked()
	s.stateChanged()
	s.mu.Unlock()
	if len(plugins) > 0 {
		go s.setupPlugins(w, plugins)
	}
	select {
	case s.joinCh <- h.Name:
	default:
	}
	for {
		f, err := l.recv()
		if err != nil {
			s.mu.Lock()
			if !w.gone {
				s.logf("worker %s at %s left: %v", w.info.Name, w.addr, err)
			}
			s.lostLocked(w, "connection closed")
			s.mu.Unlock()
			w.out.close()
			_ = l.close()
			return
		}
		s.handle(w, f)
	}
}

func (s *scheduler) handle(w *wconn, f *frame) {
	s.mu.Lock()
	defer s.mu.Unlock()
	w.lastSeen = time.Now()
	switch f.Op {
	case "stats":
		if f.Stats != nil {
			w.moved(f.Stats.Moved)
			f.Stats.Moved = nil
			// The shuffle counters only grow; a done frame may have brought newer ones.
			sent, recv, peak := w.stats.ShuffleSent, w.stats.ShuffleReceived, w.stats.HeldPeak
			w.stats = *f.Stats
			w.stats.ShuffleSent, w.stats.ShuffleReceived = max(sent, w.stats.ShuffleSent), max(recv, w.stats.ShuffleReceived)
			w.stats.HeldPeak = max(peak, w.stats.HeldPeak)
			s.sampleLocked(w)
		}
		return
	case "missing":
		// The worker could not fetch inputs from a peer: run the task again once the peer is
		// reachable or, if it is gone, once the inputs are computed again elsewhere.
		t := w.processing[f.Key]
		if t == nil {
			return
		}
		delete(w.processing, f.Key)
		s.releaseResources(w, t)
		t.state, t.worker = StateWaiting, nil
		t.missing++
		s.logf("task %s on worker %s: inputs %v unreachable (%s)", t.key, w.info.Name, f.Keys, f.Err)
		if t.missing > maxMissing {
			t.state = StateErred
			t.err = &TaskError{Key: t.key, Worker: w.info.Name, Message: "inputs unreachable " + fmt.Sprint(maxMissing) + " times: " + f.Err}
			s.erred++
			s.failDependents(t)
			t.notify()
			s.finishLocked(t)
			s.stateChanged()
			return
		}
		t.notify()
		time.AfterFunc(missingBackoff, func() {
			s.mu.Lock()
			defer s.mu.Unlock()
			if t.state == StateWaiting && !t.queued && !t.forgotten && s.inputsReady(t) {
				s.pushReady(t)
				s.scheduleLocked()
			}
		})
		s.scheduleLocked()
		return
	case "ctl":
		go func() {
			r := s.handleCtl(context.Background(), holder{id: w.id, w: w}, f.Ctl)
			w.out.push(&frame{Op: "ctlr", ReqID: f.ReqID, CtlReply: r})
		}()
		return
	case "data", "pulled", "ran", "logs":
		if ch := w.pending[f.ReqID]; ch != nil {
			delete(w.pending, f.ReqID)
			ch <- f
		}
		return
	case "done", "erred":
		w.stats.ShuffleSent, w.stats.ShuffleReceived = max(w.stats.ShuffleSent, f.ShuffleSent), max(w.stats.ShuffleReceived, f.ShuffleReceived)
		w.stats.HeldPeak = max(w.stats.HeldPeak, f.HeldPeak)
		t := w.processing[f.Key]
		if t == nil {
			// A task stolen or cancelled meanwhile; drop a result nobody tracks.
			if f.Op == "done" && w.memory[f.Key] == nil {
				w.out.push(&frame{Op: "release", Keys: []string{f.Key}})
			}
			return
		}
		delete(w.processing, f.Key)
		s.releaseResources(w, t)
		s.recordLocked(t, w, f)
		if t.forgotten || t.state == StateCancelled {
			if f.Op == "done" {
				w.out.push(&frame{Op: "release", Keys: []string{f.Key}})
			}
			t.state, t.worker = StateCancelled, nil
			s.finishLocked(t)
			s.scheduleLocked()
			return
		}
		if f.Op == "done" {
			t.state, t.worker, t.size, t.typ, t.fallback = StateMemory, w, f.Size, f.Type, f.Fallback
			w.memory[t.key] = t
			w.moved(f.Moved)
			s.done++
			for _, d := range t.dependents {
				if d.state == StateWaiting && !d.queued && s.inputsReady(d) {
					s.pushReady(d)
				}
			}
		} else {
			t.state, t.worker = StateErred, nil
			t.err = &TaskError{Key: t.key, Worker: w.info.Name, Message: f.Err, Traceback: f.Trace}
			s.erred++
			s.failDependents(t)
		}
		t.notify()
		s.finishLocked(t)
		s.finishedFAF(t)
		s.scheduleLocked()
		s.stateChanged()
	case "stolen":
		t := w.processing[f.Key]
		if t == nil {
			return
		}
		delete(w.processing, f.Key)
		s.releaseResources(w, t)
		t.stealing = false
		t.state, t.worker = StateWaiting, nil
		s.pushReady(t)
		s.scheduleLocked()
	case "notstolen":
		if t := w.processing[f.Key]; t != nil {
			t.stealing = false
		}
	}
}

func (s *scheduler) releaseResources(w *wconn, t *task) {
	for k, v := range t.resources {
		w.used[k] -= v
	}
}

// finishLocked drops the holds t had on its inputs once t is done, erred or cancelled.
func (s *scheduler) finishLocked(t *task) {
	for _, d := range t.deps {
		s.unrefLocked(d)
	}
	t.deps = nil
	if t.forgotten {
		s.forgetLocked(t)
	}
}

func (s *scheduler) unrefLocked(t *task) {
	t.refs--
	if t.refs <= 0 && !t.forgotten {
		t.forgotten = true
		s.forgetLocked(t)
	}
}

// forgetLocked removes a task nobody wants; a result is released on its worker.
func (s *scheduler) forgetLocked(t *task) {
	switch t.state {
	case StateProcessing:
		return // released when it reports back
	case StateMemory:
		if w := t.worker; w != nil {
			delete(w.memory, t.key)
			w.out.push(&frame{Op: "release", Keys: []string{t.key}})
		}
		for _, r := range t.replicas {
			delete(r.memory, t.key)
			r.out.push(&frame{Op: "release", Keys: []string{t.key}})
		}
		t.replicas = nil
	}
	if t.queued {
		s.removeReady(t)
	}
	if s.tasks[t.key] == t {
		delete(s.tasks, t.key)
	}
	for _, d := range t.deps {
		s.unrefLocked(d)
	}
	t.deps = nil
}

// failDependents errs every task that waits on t.
func (s *scheduler) failDependents(t *task) {
	for _, d := range t.dependents {
		if d.state != StateWaiting {
			continue
		}
		if d.queued {
			s.removeReady(d)
		}
		d.state = StateErred
		d.err = fmt.Errorf("task %s: input %s failed: %w", d.key, t.key, t.err)
		d.notify()
		s.failDependents(d)
		s.finishLocked(d)
		s.finishedFAF(d)
	}
}

// lostLocked handles a worker that went away: its running tasks are retried elsewhere (up to
// their limit) and results it held are computed again.
func (s *scheduler) lostLocked(w *wconn, reason string) {
	if w.gone {
		return
	}
	w.gone = true
	if s.workers[w.info.Name] == w {
		delete(s.workers, w.info.Name)
	}
	s.co.dropHolder(w.id)
	for id, ch := range w.pending {
		ch <- &frame{Op: "data", ReqID: id, Err: errWorkerLost.Error()}
		delete(w.pending, id)
	}
	for _, t := range sortedTasks(w.processing) {
		delete(w.processing, t.key)
		t.worker = nil
		t.stealing = false
		if t.forgotten || t.state == StateCancelled {
			s.finishLocked(t)
			continue
		}
		if w.restarting && t.spec.Kind == "call" {
			s.dropRestartedLocked(t, w)
			continue
		}
		t.retries++
		if t.retries > t.maxRetries {
			t.state = StateErred
			t.err = &TaskError{Key: t.key, Worker: w.info.Name, Message: fmt.Sprintf(
				"worker died (%s) while running the task, %d times: giving up (KilledWorker)", reason, t.retries)}
			s.erred++
			s.failDependents(t)
			t.notify()
			s.finishLocked(t)
			continue
		}
		t.state = StateWaiting
		t.notify()
	}
	for _, t := range sortedTasks(w.memory) {
		delete(w.memory, t.key)
		if t.worker != w {
			t.replicas = dropWorker(t.replicas, w) // w held a copy
			continue
		}
		if len(t.replicas) > 0 {
			// A copy elsewhere becomes the result: nothing to compute again.
			t.worker, t.replicas = t.replicas[0], t.replicas[1:]
			continue
		}
		if w.restarting && t.spec.Kind == "call" {
			t.worker = nil
			s.dropRestartedLocked(t, w)
			continue
		}
		t.worker = nil
		t.state = StateWaiting
		t.notify()
	}
	// Re-queue waiting tasks whose inputs are in memory; drop queued ones whose inputs vanished.
	for _, t := range s.sortedAll() {
		if t.state != StateWaiting {
			continue
		}
		ok := s.inputsReady(t)
		if ok && !t.queued {
			s.pushReady(t)
		} else if !ok && t.queued {
			s.removeReady(t)
		}
		if !ok && s.inputLost(t) {
			t.state = StateErred
			t.err = fmt.Errorf("task %s: an input was lost with worker %s and had been released", t.key, w.info.Name)
			t.notify()
			s.finishLocked(t)
		}
	}
	s.scheduleLocked()
	s.stateChanged()
}

// inputLost reports whether one of t's inputs is gone for good.
func (s *scheduler) inputLost(t *task) bool {
	for _, d := range t.deps {
		if d.forgotten && d.state != StateMemory {
			return true
		}
	}
	return false
}

func sortedTasks(m map[string]*task) []*task {
	out := make([]*task, 0, len(m))
	for _, t := range m {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].key < out[j].key })
	return out
}

func (s *scheduler) sortedAll() []*task { return sortedTasks(s.tasks) }

func (s *scheduler) inputsReady(t *task) bool {
	for _, d := range t.deps {
		if d.state != StateMemory {
			return false
		}
	}
	return true
}

func (s *scheduler) pushReady(t *task) {
	if !t.queued {
		t.queued = true
		s.ready = append(s.ready, t)
	}
}

func (s *scheduler) removeReady(t *task) {
	for i, r := range s.ready {
		if r == t {
			s.ready = append(s.ready[:i], s.ready[i+1:]...)
			break
		}
	}
	t.queued = false
}

// add registers new tasks; their inputs must be known tasks or earlier entries of ts.
func (s *scheduler) add(ts []*task) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errors.New("cluster is closed")
	}
	for _, t := range ts {
		t.state = StateWaiting
		t.changed = make(chan struct{})
		t.submitted = time.Now()
		if t.priority != 0 {
			s.prioritized = true
		}
		s.tasks[t.key] = t
		for _, d := range t.deps {
			d.refs++
			d.dependents = append(d.dependents, t)
		}
	}
	for _, t := range ts {
		for _, d := range t.deps {
			if d.state == StateErred || d.state == StateCancelled {
				t.state = StateErred
				t.err = fmt.Errorf("task %s: input %s failed: %w", t.key, d.key, d.err)
			}
		}
		if t.state == StateWaiting && s.inputsReady(t) {
			s.pushReady(t)
		}
	}
	s.scheduleLocked()
	return nil
}

func (s *scheduler) newKey(prefix string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seq++
	return fmt.Sprintf("%s-%d", prefix, s.seq)
}

// allowed reports whether worker w may run t.
func allowed(t *task, w *wconn) bool {
	if len(t.restrict) > 0 {
		ok := false
		for _, r := range t.restrict {
			if r == w.info.Name || r == w.addr || r == w.info.GPU {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return w.fits(t.resources)
}

// scheduleLocked places ready tasks on workers with room: where most of their input bytes are,
// then on the least busy worker. Idle workers then steal queued tasks from busy ones.
func (s *scheduler) scheduleLocked() {
	if s.closed || len(s.workers) == 0 {
		return
	}
	ws := make([]*wconn, 0, len(s.workers))
	for _, w := range s.workers {
		if !w.retiring {
			ws = append(ws, w)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].info.Name < ws[j].info.Name })
	if s.prioritized {
		sort.SliceStable(s.ready, func(i, j int) bool { return s.ready[i].priority > s.ready[j].priority })
	}
	kept := s.ready[:0]
	for _, t := range s.ready {
		var best *wconn
		var bestLocal int64 = -1
		for _, w := range ws {
			if len(w.processing) >= w.capacity() || !allowed(t, w) {
				continue
			}
			var local int64
			for _, d := range t.deps {
				if d.worker == w {
					local += d.size + 1
				}
			}
			if best == nil || local > bestLocal || local == bestLocal && len(w.processing) < len(best.processing) {
				best, bestLocal = w, local
			}
		}
		if h := s.homeLocked(t); h != nil && !h.gone && !h.retiring && allowed(t, h) {
			// A chunk task whose inputs (persisted chunks) one worker holds waits for
			// that worker instead of moving the chunks; so does one given a worker.
			best = nil
			if len(h.processing) < h.capacity() {
				best = h
			}
		}
		if best == nil {
			kept = append(kept, t)
			continue
		}
		t.queued = false
		s.sendTask(t, best)
	}
	for i := len(kept); i < len(s.ready); i++ {
		s.ready[i] = nil
	}
	s.ready = kept
	// Work stealing: a worker with idle threads takes a task queued behind busy threads elsewhere.
	for _, idle := range ws {
		free := idle.info.NThreads - len(idle.processing)
		for ; free > 0; free-- {
			victim, t := s.stealCandidate(ws, idle)
			if t == nil {
				break
			}
			t.stealing = true
			victim.out.push(&frame{Op: "steal", Key: t.key})
		}
	}
}

// moved records where w keeps the results it moved between tiers (device, host, disk).
func (w *wconn) moved(m map[string]string) {
	for k, tier := range m {
		if t := w.memory[k]; t != nil {
			t.tier = tier
		}
	}
}

// homeOf returns the worker holding every input of a chunk task (or a MapBlocks block), or nil
// (no inputs, inputs on several workers, or another kind of task).
func homeOf(t *task) *wconn {
	if t.spec.Kind != "chunk" && t.spec.Kind != "blocks" || len(t.deps) == 0 {
		return nil
	}
	h := t.deps[0].worker
	for _, d := range t.deps[1:] {
		if d.worker != h {
			return nil
		}
	}
	return h
}

// homeLocked returns the worker t waits for: the one holding its inputs (homeOf), else the
// connected worker it was given (task.home), else nil.
func (s *scheduler) homeLocked(t *task) *wconn {
	if h := homeOf(t); h != nil || t.home == "" {
		return h
	}
	return s.workers[t.home]
}

// stealCandidate picks the most recently sent task queued (not running) on a busy worker that
// idle may run.
func (s *scheduler) stealCandidate(ws []*wconn, idle *wconn) (*wconn, *task) {
	var victim *wconn
	var best *task
	for _, w := range ws {
		if w == idle || len(w.processing) <= w.info.NThreads {
			continue
		}
		for _, t := range w.processing {
			if t.stealing || !allowed(t, idle) || s.homeLocked(t) == w {
				continue
			}
			if best == nil || t.sentSeq > best.sentSeq {
				victim, best = w, t
			}
		}
	}
	return victim, best
}

// sendTask marks t processing on w and sends it, with the data of inputs held elsewhere
// (fetched first, off the lock).
func (s *scheduler) sendTask(t *task, w *wconn) {
	t.state, t.worker = StateProcessing, w
	w.sent++
	t.sentSeq = w.sent
	w.processing[t.key] = t
	for k, v := range t.resources {
		w.used[k] += v
	}
	var remote []*task
	direct := w.dataAddr != ""
	for _, d := range t.deps {
		if d.worker != w {
			remote = append(remote, d)
			if d.worker == nil || d.worker.dataAddr == "" {
				direct = false
			}
		}
	}
	t.notify()
	if len(remote) == 0 {
		w.out.push(&frame{Op: "task", Task: &taskMsg{Key: t.key, Spec: t.spec}})
		return
	}
	if direct {
		// The worker fetches its inputs from their holders itself.
		who := make(map[string]string, len(remote))
		for _, d := range remote {
			who[d.key] = d.worker.dataAddr
		}
		w.out.push(&frame{Op: "task", Task: &taskMsg{Key: t.key, Spec: t.spec, Who: who}})
		return
	}
	go func() {
		deps := map[string]*blob{}
		for _, d := range remote {
			b, err := s.fetch(context.Background(), d.key)
			if err != nil {
				s.mu.Lock()
				if w.processing[t.key] == t {
					delete(w.processing, t.key)
					s.releaseResources(w, t)
					t.state, t.worker = StateWaiting, nil
					if s.inputsReady(t) {
						s.pushReady(t)
					}
					t.notify()
					s.scheduleLocked()
				}
				s.mu.Unlock()
				return
			}
			deps[d.key] = b
		}
		s.mu.Lock()
		if w.processing[t.key] == t && !w.gone {
			w.out.push(&frame{Op: "task", Task: &taskMsg{Key: t.key, Spec: t.spec, Deps: deps}})
		}
		s.mu.Unlock()
	}()
}

// fetch gets the encoded result of a task in memory from the worker holding it.
func (s *scheduler) fetch(ctx context.Context, key string) (*blob, error) {
	s.mu.Lock()
	t := s.tasks[key]
	if t == nil || t.state != StateMemory || t.worker == nil {
		s.mu.Unlock()
		return nil, fmt.Errorf("fetch %s: not in memory", key)
	}
	w := t.worker
	id := s.reqSeq.Add(1)
	ch := make(chan *frame, 1)
	w.pending[id] = ch
	w.out.push(&frame{Op: "get", Key: key, ReqID: id})
	s.mu.Unlock()
	select {
	case f := <-ch:
		if f.Err != "" {
			return nil, fmt.Errorf("fetch %s from %s: %s", key, w.info.Name, f.Err)
		}
		return f.Blob, nil
	case <-ctx.Done():
		s.mu.Lock()
		delete(w.pending, id)
		s.mu.Unlock()
		return nil, fmt.Errorf("fetch %s: %w", key, ctx.Err())
	}
}

// cancel cancels tasks that have not finished.
func (s *scheduler) cancel(keys []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		t := s.tasks[k]
		if t == nil || t.state == StateMemory || t.state == StateErred || t.state == StateCancelled {
			continue
		}
		if t.queued {
			s.removeReady(t)
		}
		if t.state == StateProcessing && t.worker != nil {
			t.worker.out.push(&frame{Op: "cancel", Key: t.key})
		}
		t.state = StateCancelled
		t.err = ErrCancelled
		t.notify()
		s.failDependents(t)
	}
	s.stateChanged()
}

// close stops the scheduler: workers are told to exit and connections closed.
func (s *scheduler) close() { s.shutdown(true) }

// shutdown stops the scheduler. With tellWorkers false, workers are not told to exit: their
// connections just close, and workers that reconnect join the next scheduler at this address.
func (s *scheduler) shutdown(tellWorkers bool) {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return
	}
	s.closed = true
	_ = s.ln.Close()
	close(s.stopPing)
	for _, w := range s.workers {
		if tellWorkers {
			w.out.push(&frame{Op: "close"})
		}
		w.out.close()
		if !tellWorkers {
			_ = w.link.close()
		}
	}
	for cc := range s.clients {
		cc.out.push(&frame{Op: "close", Err: "scheduler closed"})
		cc.out.close()
	}
	for _, t := range s.tasks {
		if t.state == StateWaiting || t.state == StateProcessing {
			t.state = StateCancelled
			t.err = errors.New("cluster closed")
			t.notify()
		}
	}
	s.stateChanged()
	s.mu.Unlock()
}
