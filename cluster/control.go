package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
)

// Control requests are what is not a task: sizing (wait for workers, retire), data placement
// (who has what, rebalance, replicate), runs of a function on every worker, the task stream
// and worker logs, and the coordination primitives (locks, semaphores, queues, variables,
// events, published datasets). A client in this process calls the scheduler directly; a
// remote client (Connect) and a worker (from a submitted function) send a "ctl" frame and
// get a "ctlr" frame with the same request id. The scheduler answers each request on its own
// goroutine, so a request that waits (a lock, a queue's Get) holds up no other.

// ctlMsg is one control request.
type ctlMsg struct {
	Op    string
	Name  string
	Names []string
	Keys  []string
	Value *blob
	N     int
	// Timeout bounds a request that waits: 0 waits without limit, < 0 does not wait.
	Timeout time.Duration
	Lease   uint64
	// Source, Func and Args are a function to run on workers (run).
	Source, Func string
	Args         []arg
	Since        time.Time
}

// ctlReply answers a ctlMsg.
type ctlReply struct {
	OK     bool
	Err    string
	Value  *blob
	N      int
	Lease  uint64
	Key    string
	Names  []string
	Values map[string]*blob
	Errs   map[string]string
	Where  map[string][]string
	Stream []TaskEvent
	// Samples and Sources are the workers' resource history and the shipped functions' code
	// by task kind (history, for PerformanceReport).
	Samples map[string][]Sample
	Sources map[string]string
}

func (r *ctlReply) err() error {
	if r.Err == "" {
		return nil
	}
	return errors.New(r.Err)
}

// controller sends control requests: the scheduler in this process, a remote scheduler, or,
// on a worker, the worker's scheduler.
type controller interface {
	control(ctx context.Context, m *ctlMsg) (*ctlReply, error)
}

// holder is who sent a control request: leases (locks, semaphores) end when it goes away.
type holder struct {
	id string
	cc *cconn // a remote client
	w  *wconn // a worker
}

// control answers a request of a client in this process.
func (s *scheduler) control(ctx context.Context, m *ctlMsg) (*ctlReply, error) {
	return s.handleCtl(ctx, holder{id: "local"}, m), nil
}

// handleCtl answers one control request.
func (s *scheduler) handleCtl(ctx context.Context, h holder, m *ctlMsg) *ctlReply {
	if m == nil {
		return &ctlReply{Err: "empty control request"}
	}
	switch m.Op {
	case "wait_workers":
		return s.waitWorkers(ctx, m.N, m.Timeout)
	case "retire":
		return errReply(s.retire(ctx, m.Names, true))
	case "who_has":
		return s.whoHas(m.Keys)
	case "has_what":
		return s.hasWhat()
	case "rebalance":
		return errReply(s.rebalance(ctx))
	case "replicate":
		return errReply(s.replicate(ctx, m.Keys, m.N))
	case "run":
		return s.runOnWorkers(ctx, m)
	case "run_scheduler":
		return s.runOnScheduler(ctx, m)
	case "faf":
		return s.fireAndForget(m.Keys)
	case "stream":
		return s.taskStream(m.Since)
	case "history":
		return s.historySince(m)
	case "logs":
		return s.workerLogs(ctx, m.N)
	case "plugin", "unplugin":
		return s.plugin(ctx, m)
	case "publish", "unpublish", "datasets", "get_dataset":
		return s.datasetCtl(h, m)
	}
	return s.co.handle(ctx, h.id, m)
}

func errReply(err error) *ctlReply {
	if err != nil {
		return &ctlReply{Err: err.Error()}
	}
	return &ctlReply{OK: true}
}

// connSeq numbers connections for lease holders.
var connSeq atomic.Uint64

func (r *remote) control(ctx context.Context, m *ctlMsg) (*ctlReply, error) {
	a, err := r.request(ctx, &frame{Op: "ctl", Ctl: m})
	if err != nil {
		return nil, err
	}
	if a.CtlReply == nil {
		if a.Err != "" {
			return nil, errors.New(a.Err)
		}
		return nil, fmt.Errorf("%s: the scheduler at %s sent no answer", m.Op, r.addr)
	}
	return a.CtlReply, nil
}

// workerSelf is the worker this process runs (a `gpunotes worker` process), so that
// coordination primitives made in submitted functions talk to its scheduler.
var workerSelf atomic.Pointer[worker]

// defaultClient is the cluster or client made last in this process: coordination primitives
// made in a cell use it.
var defaultClient atomic.Pointer[Client]

// currentController is what coordination primitives talk to.
func currentController() (controller, error) {
	if w := workerSelf.Load(); w != nil {
		return w, nil
	}
	if c := defaultClient.Load(); c != nil {
		return c.s, nil
	}
	return nil, errors.New("no cluster: start one (cluster.NewLocalCUDA) or connect to one (cluster.Connect) " +
		"first; in a submitted function the worker's scheduler is used")
}

// workerCtl is a worker's side of control requests.
type workerCtl struct {
	mu      sync.Mutex
	seq     uint64
	pending map[uint64]chan *ctlReply
	gone    error
}

func (w *worker) control(ctx context.Context, m *ctlMsg) (*ctlReply, error) {
	w.ctl.mu.Lock()
	if w.ctl.gone != nil {
		err := w.ctl.gone
		w.ctl.mu.Unlock()
		return nil, err
	}
	if w.ctl.pending == nil {
		w.ctl.pending = map[uint64]chan *ctlReply{}
	}
	w.ctl.seq++
	id := w.ctl.seq
	ch := make(chan *ctlReply, 1)
	w.ctl.pending[id] = ch
	w.ctl.mu.Unlock()
	if err := w.l.send(&frame{Op: "ctl", ReqID: id, Ctl: m}); err != nil {
		w.ctl.mu.Lock()
		delete(w.ctl.pending, id)
		w.ctl.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", m.Op, err)
	}
	select {
	case r := <-ch:
		if r == nil {
			return nil, fmt.Errorf("%s: the scheduler connection closed", m.Op)
		}
		return r, nil
	case <-ctx.Done():
		w.ctl.mu.Lock()
		delete(w.ctl.pending, id)
		w.ctl.mu.Unlock()
		return nil, fmt.Errorf("%s: %w", m.Op, ctx.Err())
	}
}

// ctlAnswer delivers a reply to a worker's control request.
func (w *worker) ctlAnswer(f *frame) {
	w.ctl.mu.Lock()
	ch := w.ctl.pending[f.ReqID]
	delete(w.ctl.pending, f.ReqID)
	w.ctl.mu.Unlock()
	if ch != nil {
		ch <- f.CtlReply
	}
}

// ctlClose fails the worker's waiting control requests when its connection ends.
func (w *worker) ctlClose() {
	w.ctl.mu.Lock()
	defer w.ctl.mu.Unlock()
	w.ctl.gone = errors.New("the worker's scheduler connection closed")
	for id, ch := range w.ctl.pending {
		delete(w.ctl.pending, id)
		ch <- nil
	}
}

// ask sends a request to worker w and waits for its answer (a frame with the same ReqID).
func (s *scheduler) ask(ctx context.Context, w *wconn, f *frame) (*frame, error) {
	id := s.reqSeq.Add(1)
	ch := make(chan *frame, 1)
	s.mu.Lock()
	if w.gone {
		s.mu.Unlock()
		return nil, fmt.Errorf("worker %s: %w", w.info.Name, errWorkerLost)
	}
	w.pending[id] = ch
	f.ReqID = id
	w.out.push(f)
	s.mu.Unlock()
	select {
	case a := <-ch:
		if a.Err != "" {
			return a, fmt.Errorf("worker %s: %s", w.info.Name, a.Err)
		}
		return a, nil
	case <-ctx.Done():
		s.mu.Lock()
		delete(w.pending, id)
		s.mu.Unlock()
		return nil, fmt.Errorf("worker %s: %w", w.info.Name, ctx.Err())
	}
}

// ctlCall sends a request through the client's backend and turns an error reply into an error.
func (c *Client) ctlCall(ctx context.Context, m *ctlMsg) (*ctlReply, error) {
	r, err := c.s.control(ctxOr(ctx), m)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s: %w", m.Op, err)
	}
	if err := r.err(); err != nil {
		return r, fmt.Errorf("cluster: %s: %w", m.Op, err)
	}
	return r, nil
}
