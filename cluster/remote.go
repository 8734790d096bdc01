package cluster

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// A remote client (Connect) speaks the workers' framing on the scheduler's port, with hello
// role "client". It sends submit (tasks with the keys of their inputs), release, cancel,
// fetch and info; the scheduler answers with state frames for every change of a task the
// client submitted, and data and workers frames for its requests. The scheduler holds one
// reference per submitted task for the client and drops them all when the client goes away.

// cconn is a remote client as the scheduler sees it.
type cconn struct {
	id   string
	addr string
	name string
	out  *outbox
	held map[string]*task
}

// serveClient runs one remote client's connection.
func (s *scheduler) serveClient(c net.Conn, l *link, h *hello) {
	cc := &cconn{addr: c.RemoteAddr().String(), name: h.Name, held: map[string]*task{},
		id: fmt.Sprintf("client:%s#%d", h.Name, connSeq.Add(1))}
	cc.out = newOutbox(l, func(error) { _ = l.close() })
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		_ = l.send(&frame{Op: "refused", Err: "scheduler closed"})
		_ = l.close()
		return
	}
	s.clients[cc] = true
	cc.out.push(&frame{Op: "welcome", Dashboard: s.dashURL, Address: s.address()})
	s.stateChanged()
	s.mu.Unlock()
	s.logf("client %s connected from %s", h.Name, cc.addr)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	for {
		f, err := l.recv()
		if err != nil {
			break
		}
		switch f.Op {
		case "submit":
			s.clientSubmit(cc, f.Submit)
		case "release":
			s.mu.Lock()
			for _, k := range f.Keys {
				if t := cc.held[k]; t != nil {
					delete(cc.held, k)
					t.owner = nil
					if !t.forgotten {
						s.unrefLocked(t)
					}
				}
			}
			s.mu.Unlock()
		case "cancel":
			s.cancel(f.Keys)
		case "fetch":
			go func(key string, id uint64) {
				b, err := s.fetch(ctx, key)
				r := &frame{Op: "data", ReqID: id, Key: key, Blob: b}
				if err != nil {
					r.Err = err.Error()
				}
				cc.out.push(r)
			}(f.Key, f.ReqID)
		case "info":
			cc.out.push(&frame{Op: "workers", ReqID: f.ReqID, Workers: s.workerInfo()})
		case "ctl":
			go func(m *ctlMsg, id uint64) {
				r := s.handleCtl(ctx, holder{id: cc.id, cc: cc}, m)
				cc.out.push(&frame{Op: "ctlr", ReqID: id, CtlReply: r})
			}(f.Ctl, f.ReqID)
		}
	}
	s.co.dropHolder(cc.id)
	s.mu.Lock()
	delete(s.clients, cc)
	for k, t := range cc.held {
		delete(cc.held, k)
		t.owner = nil
		if !t.forgotten {
			s.unrefLocked(t)
		}
	}
	s.stateChanged()
	s.mu.Unlock()
	cc.out.close()
	_ = l.close()
	s.logf("client %s at %s disconnected; its tasks were released", h.Name, cc.addr)
}

// clientSubmit registers a remote client's tasks and tells it their first state.
func (s *scheduler) clientSubmit(cc *cconn, cts []clientTask) {
	s.mu.Lock()
	ts := make([]*task, 0, len(cts))
	byKey := map[string]*task{}
	var bad []*task
	for _, ct := range cts {
		t := &task{key: ct.Key, spec: ct.Spec, restrict: ct.Restrict, resources: ct.Resources,
			maxRetries: ct.MaxRetries, refs: 1, owner: cc, priority: ct.Priority, home: ct.Home}
		var err error
		if s.tasks[ct.Key] != nil {
			err = fmt.Errorf("task %s was submitted twice", ct.Key)
		}
		for _, k := range ct.Deps {
			d := byKey[k]
			if d == nil {
				d = s.tasks[k]
			}
			if d == nil || d.forgotten {
				err = fmt.Errorf("task %s: input %s is not known to the scheduler (released, or lost when the scheduler restarted)", ct.Key, k)
				break
			}
			t.deps = append(t.deps, d)
		}
		if err == nil && len(ct.Restrict) > 0 {
			err = s.checkWorkersLocked(ct.Restrict)
		}
		if err != nil {
			t.deps = nil
			t.state, t.err, t.changed = StateErred, err, make(chan struct{})
			bad = append(bad, t)
			continue
		}
		byKey[t.key] = t
		cc.held[t.key] = t
		ts = append(ts, t)
	}
	s.mu.Unlock()
	for _, t := range bad {
		cc.out.push(stateFrame(t))
	}
	if err := s.add(ts); err != nil {
		for _, t := range ts {
			cc.out.push(&frame{Op: "state", Key: t.key, State: StateErred, Err: err.Error()})
		}
		return
	}
	s.mu.Lock()
	for _, t := range ts {
		cc.out.push(stateFrame(t))
	}
	s.stateChanged()
	s.mu.Unlock()
}

// remote is a Client's backend for a scheduler in another process.
type remote struct {
	addr    string
	tls     bool
	id      string
	l       *link
	dash    string
	seq     atomic.Uint64
	reqSeq  atomic.Uint64
	mu      sync.Mutex
	tasks   map[string]*task // mirrors of submitted tasks, by key
	pending map[uint64]chan *frame
	err     error // set when the connection is gone
	done    chan struct{}
}

// Connect connects a client to a standalone scheduler (`gpunotes scheduler`) at addr
// ("tcp://host:port" or "host:port") with its token. The client has the API of a local
// cluster's: Submit, Map, Gather, and it is a gpuarray.Scheduler (Compute(gpuarray.On(c))).
// Close disconnects it; the scheduler then releases what it submitted and keeps serving others.
func Connect(addr, token string) (*Client, error) {
	return ConnectContext(context.Background(), addr, token)
}

// ConnectContext is Connect with a context bounding the connection's setup.
func ConnectContext(ctx context.Context, addr, token string) (*Client, error) {
	return ConnectTLSContext(ctx, addr, token, nil)
}

// ConnectTLS is Connect over TLS, for a scheduler started with --tls-cert: cfg verifies the
// scheduler (RootCAs; ServerName defaults to the host of addr) and, for mutual TLS, holds the
// client's certificate. TLSFiles.ClientConfig makes one from the scheduler's PEM files. A nil
// cfg is plaintext, as Connect. A certificate either side rejects is an error wrapping
// ErrRefused.
func ConnectTLS(addr, token string, cfg *tls.Config) (*Client, error) {
	return ConnectTLSContext(context.Background(), addr, token, cfg)
}

// ConnectTLSContext is ConnectTLS with a context bounding the connection's setup.
func ConnectTLSContext(ctx context.Context, addr, token string, cfg *tls.Config) (*Client, error) {
	hostport := strings.TrimPrefix(addr, "tcp://")
	d := net.Dialer{Timeout: 10 * time.Second}
	c, err := d.DialContext(ctx, "tcp", hostport)
	if err != nil {
		return nil, fmt.Errorf("cluster: connect to scheduler %s: %w", addr, err)
	}
	if cfg != nil {
		if c, err = tlsHandshake(c, cfg, hostport, 10*time.Second); err != nil {
			if isTLSRefusal(err) {
				err = fmt.Errorf("%w: %w", ErrRefused, err)
			}
			return nil, fmt.Errorf("cluster: connect to scheduler %s: %w", addr, err)
		}
	}
	if err := authDialer(c, token, roleClient); err != nil {
		_ = c.Close()
		if cfg != nil && isTLSRefusal(err) {
			return nil, fmt.Errorf("cluster: connect to scheduler %s: %w: %w", addr, ErrRefused, tlsExplain(err))
		}
		return nil, fmt.Errorf("cluster: connect to scheduler %s: %w", addr, err)
	}
	l := newLink(c)
	id := make([]byte, 4)
	_, _ = rand.Read(id)
	r := &remote{addr: "tcp://" + hostport, tls: cfg != nil, id: hex.EncodeToString(id), l: l,
		tasks: map[string]*task{}, pending: map[uint64]chan *frame{}, done: make(chan struct{})}
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if err := l.send(&frame{Op: "hello", Hello: &hello{Version: protoVersion, Role: "client", Name: "client-" + r.id}}); err != nil {
		_ = l.close()
		return nil, fmt.Errorf("cluster: connect to scheduler %s: %w", addr, err)
	}
	f, err := l.recv()
	if err != nil {
		_ = l.close()
		if cfg != nil && isTLSRefusal(err) {
			return nil, fmt.Errorf("cluster: connect to scheduler %s: %w: %w", addr, ErrRefused, tlsExplain(err))
		}
		return nil, fmt.Errorf("cluster: connect to scheduler %s: %w", addr, err)
	}
	if f.Op != "welcome" {
		_ = l.close()
		return nil, fmt.Errorf("cluster: connect to scheduler %s: %w: %s", addr, ErrRefused, f.Err)
	}
	_ = c.SetDeadline(time.Time{})
	r.dash = f.Dashboard
	go r.read()
	cl := newClient(r, 0)
	defaultClient.Store(cl)
	return cl, nil
}

// read applies the scheduler's frames until the connection ends.
func (r *remote) read() {
	var err error
	for {
		_ = r.l.c.SetReadDeadline(time.Now().Add(15 * time.Second))
		var f *frame
		f, err = r.l.recv()
		if err != nil {
			break
		}
		if f.Op == "close" {
			err = errors.New(f.Err)
			break
		}
		r.mu.Lock()
		switch f.Op {
		case "state":
			if t := r.tasks[f.Key]; t != nil {
				t.state = f.State
				t.err = nil
				switch {
				case f.Type == "TaskError":
					t.err = &TaskError{Key: f.Key, Worker: f.Reason, Message: f.Err, Traceback: f.Trace}
				case f.State == StateCancelled && f.Err == ErrCancelled.Error():
					t.err = ErrCancelled
				case f.Err != "":
					t.err = errors.New(f.Err)
				}
				t.notify()
			}
		case "data", "workers", "ctlr":
			if ch := r.pending[f.ReqID]; ch != nil {
				delete(r.pending, f.ReqID)
				ch <- f
			}
		}
		r.mu.Unlock()
	}
	r.mu.Lock()
	if r.err == nil {
		r.err = fmt.Errorf("lost the connection to scheduler %s: %w", r.addr, err)
	}
	for _, t := range r.tasks {
		if t.state == StateWaiting || t.state == StateProcessing {
			t.state, t.err = StateErred, r.err
			t.notify()
		}
	}
	for id, ch := range r.pending {
		delete(r.pending, id)
		ch <- &frame{Op: "data", ReqID: id, Err: r.err.Error()}
	}
	r.mu.Unlock()
	close(r.done)
	_ = r.l.close()
}

func (r *remote) newKey(prefix string) string {
	return fmt.Sprintf("%s@%s-%d", prefix, r.id, r.seq.Add(1))
}

func (r *remote) add(ts []*task) error {
	cts := make([]clientTask, len(ts))
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return r.err
	}
	for i, t := range ts {
		t.state = StateWaiting
		t.changed = make(chan struct{})
		t.submitted = time.Now()
		r.tasks[t.key] = t
		ct := clientTask{Key: t.key, Spec: t.spec, Restrict: t.restrict, Resources: t.resources, MaxRetries: t.maxRetries, Priority: t.priority, Home: t.home}
		for _, d := range t.deps {
			ct.Deps = append(ct.Deps, d.key)
		}
		cts[i] = ct
	}
	r.mu.Unlock()
	if err := r.l.send(&frame{Op: "submit", Submit: cts}); err != nil {
		return fmt.Errorf("submit to %s: %w", r.addr, err)
	}
	return nil
}

// request sends f with a new request id and waits for the answer.
func (r *remote) request(ctx context.Context, f *frame) (*frame, error) {
	id := r.reqSeq.Add(1)
	ch := make(chan *frame, 1)
	r.mu.Lock()
	if r.err != nil {
		r.mu.Unlock()
		return nil, r.err
	}
	r.pending[id] = ch
	r.mu.Unlock()
	f.ReqID = id
	if err := r.l.send(f); err != nil {
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
		return nil, fmt.Errorf("%s request to %s: %w", f.Op, r.addr, err)
	}
	select {
	case a := <-ch:
		return a, nil
	case <-ctx.Done():
		r.mu.Lock()
		delete(r.pending, id)
		r.mu.Unlock()
		return nil, fmt.Errorf("%s request to %s: %w", f.Op, r.addr, ctx.Err())
	}
}

func (r *remote) fetch(ctx context.Context, key string) (*blob, error) {
	a, err := r.request(ctx, &frame{Op: "fetch", Key: key})
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", key, err)
	}
	if a.Err != "" {
		return nil, errors.New(a.Err)
	}
	return a.Blob, nil
}

func (r *remote) cancel(keys []string) {
	if len(keys) > 0 {
		_ = r.l.send(&frame{Op: "cancel", Keys: keys})
	}
}

func (r *remote) release(key string) {
	r.mu.Lock()
	delete(r.tasks, key)
	gone := r.err != nil
	r.mu.Unlock()
	if !gone {
		_ = r.l.send(&frame{Op: "release", Keys: []string{key}})
	}
}

func (r *remote) locker() sync.Locker { return &r.mu }

func (r *remote) workerInfo() []WorkerInfo {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	a, err := r.request(ctx, &frame{Op: "info"})
	if err != nil {
		return nil
	}
	return a.Workers
}

// checkWorkers is done by the scheduler, which errs the task of a bad restriction.
func (r *remote) checkWorkers([]string) error { return nil }

func (r *remote) address() string { return r.addr }

func (r *remote) secure() bool { return r.tls }

func (r *remote) dashboard() string { return r.dash }

// Close disconnects a client made by Connect: the scheduler releases its tasks and results.
// For a local cluster's client it does nothing (close the cluster instead).
func (c *Client) Close() error {
	r, ok := c.s.(*remote)
	if !ok {
		return nil
	}
	r.mu.Lock()
	if r.err == nil {
		r.err = errors.New("client closed")
	}
	r.mu.Unlock()
	defaultClient.CompareAndSwap(c, nil)
	err := r.l.close()
	<-r.done
	if err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close client: %w", err)
	}
	return nil
}
