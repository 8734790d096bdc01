package cluster

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// coord is the scheduler's coordination state: semaphores (a Lock is a semaphore of one
// lease), queues, variables and events, by name. Leases belong to the connection that took
// them and end when it goes away (a worker that dies, a client that disconnects).
type coord struct {
	mu      sync.Mutex
	changed chan struct{}
	seq     uint64
	sems    map[string]*sem
	queues  map[string][]*blob
	vars    map[string]*blob
	events  map[string]bool
}

type sem struct {
	max    int
	leases map[uint64]string // lease -> holder
}

func newCoord() *coord {
	return &coord{changed: make(chan struct{}), sems: map[string]*sem{}, queues: map[string][]*blob{},
		vars: map[string]*blob{}, events: map[string]bool{}}
}

// bump wakes every waiter; the caller holds co.mu.
func (co *coord) bump() {
	close(co.changed)
	co.changed = make(chan struct{})
}

// await calls try under co.mu until it returns true, the timeout passes (0: no limit, < 0:
// try once) or ctx ends.
func (co *coord) await(ctx context.Context, timeout time.Duration, try func() bool) (bool, error) {
	var timer <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		timer = t.C
	}
	for {
		co.mu.Lock()
		if try() {
			co.mu.Unlock()
			return true, nil
		}
		ch := co.changed
		co.mu.Unlock()
		if timeout < 0 {
			return false, nil
		}
		select {
		case <-ch:
		case <-timer:
			return false, nil
		case <-ctx.Done():
			return false, ctx.Err()
		}
	}
}

// dropHolder ends the leases of a connection that went away.
func (co *coord) dropHolder(id string) {
	co.mu.Lock()
	defer co.mu.Unlock()
	n := 0
	for _, s := range co.sems {
		for l, h := range s.leases {
			if h == id {
				delete(s.leases, l)
				n++
			}
		}
	}
	if n > 0 {
		co.bump()
	}
}

func (co *coord) handle(ctx context.Context, who string, m *ctlMsg) *ctlReply {
	switch m.Op {
	case "acquire":
		max := m.N
		if max < 1 {
			max = 1
		}
		var lease uint64
		var bad error
		ok, err := co.await(ctx, m.Timeout, func() bool {
			s := co.sems[m.Name]
			if s == nil {
				s = &sem{max: max, leases: map[uint64]string{}}
				co.sems[m.Name] = s
			}
			if s.max != max {
				bad = fmt.Errorf("semaphore %q has %d leases, not %d", m.Name, s.max, max)
				return true
			}
			if len(s.leases) >= s.max {
				return false
			}
			co.seq++
			lease = co.seq
			s.leases[lease] = who
			return true
		})
		if bad != nil {
			return &ctlReply{Err: bad.Error()}
		}
		if err != nil {
			return &ctlReply{Err: err.Error()}
		}
		return &ctlReply{OK: ok, Lease: lease}
	case "release":
		co.mu.Lock()
		defer co.mu.Unlock()
		s := co.sems[m.Name]
		if s == nil || s.leases[m.Lease] == "" {
			return &ctlReply{Err: fmt.Sprintf("%q: lease %d is not held (released already, or it ended when its holder went away)", m.Name, m.Lease)}
		}
		delete(s.leases, m.Lease)
		co.bump()
		return &ctlReply{OK: true}
	case "held":
		co.mu.Lock()
		defer co.mu.Unlock()
		n := 0
		if s := co.sems[m.Name]; s != nil {
			n = len(s.leases)
		}
		return &ctlReply{OK: true, N: n}
	case "q_put":
		co.mu.Lock()
		defer co.mu.Unlock()
		co.queues[m.Name] = append(co.queues[m.Name], m.Value)
		co.bump()
		return &ctlReply{OK: true}
	case "q_get":
		var v *blob
		ok, err := co.await(ctx, m.Timeout, func() bool {
			q := co.queues[m.Name]
			if len(q) == 0 {
				return false
			}
			v = q[0]
			co.queues[m.Name] = q[1:]
			return true
		})
		if err != nil {
			return &ctlReply{Err: err.Error()}
		}
		return &ctlReply{OK: ok, Value: v}
	case "q_len":
		co.mu.Lock()
		defer co.mu.Unlock()
		return &ctlReply{OK: true, N: len(co.queues[m.Name])}
	case "v_set":
		co.mu.Lock()
		defer co.mu.Unlock()
		co.vars[m.Name] = m.Value
		co.bump()
		return &ctlReply{OK: true}
	case "v_get":
		var v *blob
		ok, err := co.await(ctx, m.Timeout, func() bool {
			b, set := co.vars[m.Name]
			v = b
			return set
		})
		if err != nil {
			return &ctlReply{Err: err.Error()}
		}
		return &ctlReply{OK: ok, Value: v}
	case "v_del":
		co.mu.Lock()
		defer co.mu.Unlock()
		delete(co.vars, m.Name)
		co.bump()
		return &ctlReply{OK: true}
	case "e_set", "e_clear":
		co.mu.Lock()
		defer co.mu.Unlock()
		co.events[m.Name] = m.Op == "e_set"
		co.bump()
		return &ctlReply{OK: true}
	case "e_wait":
		ok, err := co.await(ctx, m.Timeout, func() bool { return co.events[m.Name] })
		if err != nil {
			return &ctlReply{Err: err.Error()}
		}
		return &ctlReply{OK: ok}
	}
	return &ctlReply{Err: fmt.Sprintf("unknown control request %q", m.Op)}
}

// coordCall sends a coordination request from wherever this code runs.
func coordCall(ctx context.Context, m *ctlMsg) (*ctlReply, error) {
	c, err := currentController()
	if err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	r, err := c.control(ctxOr(ctx), m)
	if err != nil {
		return nil, fmt.Errorf("cluster: %s %q: %w", m.Op, m.Name, err)
	}
	if err := r.err(); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return r, nil
}

// wireTimeout maps the API's timeout (0: no limit; < 0: do not wait) onto a request's.
func wireTimeout(d time.Duration) time.Duration { return d }

// Lock is a cluster-wide lock, as dask's distributed.Lock: every Lock of the same name, in a
// cell or in a function running on a worker, is the same lock. A lock held by a worker that
// dies, or by a client that disconnects, is released: its lease ends with its connection.
type Lock struct {
	name  string
	mu    sync.Mutex
	lease uint64
}

// NewLock returns the cluster-wide lock of that name (on a worker: of the worker's cluster;
// in a cell: of the cluster started or connected last).
func NewLock(name string) *Lock { return &Lock{name: name} }

// Acquire takes the lock, waiting at most timeout (0: without limit, bounded by the cell's
// context; < 0: not at all). It reports whether the lock was taken.
func (l *Lock) Acquire(timeout time.Duration) (bool, error) {
	return acquire(&l.mu, &l.lease, "lock/"+l.name, 1, timeout)
}

// Release releases the lock this Lock took.
func (l *Lock) Release() error { return release(&l.mu, &l.lease, "lock/"+l.name) }

// Locked reports whether anyone holds the lock.
func (l *Lock) Locked() (bool, error) {
	r, err := coordCall(cellContext(), &ctlMsg{Op: "held", Name: "lock/" + l.name})
	if err != nil {
		return false, err
	}
	return r.N > 0, nil
}

// Name is the lock's name.
func (l *Lock) Name() string { return l.name }

func acquire(mu *sync.Mutex, lease *uint64, name string, max int, timeout time.Duration) (bool, error) {
	mu.Lock()
	held := *lease != 0
	mu.Unlock()
	if held {
		return false, fmt.Errorf("cluster: %q: this handle holds a lease already; release it first or make another handle", name)
	}
	r, err := coordCall(cellContext(), &ctlMsg{Op: "acquire", Name: name, N: max, Timeout: wireTimeout(timeout)})
	if err != nil {
		return false, err
	}
	if r.OK {
		mu.Lock()
		*lease = r.Lease
		mu.Unlock()
	}
	return r.OK, nil
}

func release(mu *sync.Mutex, lease *uint64, name string) error {
	mu.Lock()
	l := *lease
	*lease = 0
	mu.Unlock()
	if l == 0 {
		return fmt.Errorf("cluster: %q: released, but this handle holds no lease", name)
	}
	_, err := coordCall(cellContext(), &ctlMsg{Op: "release", Name: name, Lease: l})
	return err
}

// Semaphore is a cluster-wide semaphore of MaxLeases leases, as dask's distributed.Semaphore.
// A lease held by a worker that dies, or a client that disconnects, ends with its connection.
// Each Semaphore value holds at most one lease; make one per concurrent holder.
type Semaphore struct {
	name  string
	max   int
	mu    sync.Mutex
	lease uint64
}

// NewSemaphore returns a handle on the cluster-wide semaphore of that name with maxLeases
// leases (every handle of a name must agree on it).
func NewSemaphore(name string, maxLeases int) *Semaphore {
	return &Semaphore{name: name, max: maxLeases}
}

// Acquire takes a lease, waiting at most timeout (0: without limit; < 0: not at all).
func (s *Semaphore) Acquire(timeout time.Duration) (bool, error) {
	if s.max < 1 {
		return false, fmt.Errorf("cluster: semaphore %q: maxLeases %d must be at least 1", s.name, s.max)
	}
	return acquire(&s.mu, &s.lease, "sem/"+s.name, s.max, timeout)
}

// Release returns the lease this handle took.
func (s *Semaphore) Release() error { return release(&s.mu, &s.lease, "sem/"+s.name) }

// Held is how many leases are taken now.
func (s *Semaphore) Held() (int, error) {
	r, err := coordCall(cellContext(), &ctlMsg{Op: "held", Name: "sem/" + s.name})
	if err != nil {
		return 0, err
	}
	return r.N, nil
}

// Queue is a cluster-wide FIFO queue of values, as dask's distributed.Queue. It lives in the
// scheduler: clients that disconnect and come back find it as they left it.
type Queue struct{ name string }

// NewQueue returns the cluster-wide queue of that name.
func NewQueue(name string) *Queue { return &Queue{name: name} }

// Put appends a value (anything Submit can pass as an argument).
func (q *Queue) Put(v any) error {
	b, err := encodeValue(v)
	if err != nil {
		return fmt.Errorf("cluster: queue %q: %w", q.name, err)
	}
	_, err = coordCall(cellContext(), &ctlMsg{Op: "q_put", Name: q.name, Value: b})
	return err
}

// Get takes the oldest value, waiting at most timeout for one (0: without limit; < 0: not at
// all); an empty queue past the timeout is an error.
func (q *Queue) Get(timeout time.Duration) (any, error) {
	r, err := coordCall(cellContext(), &ctlMsg{Op: "q_get", Name: q.name, Timeout: wireTimeout(timeout)})
	if err != nil {
		return nil, err
	}
	if !r.OK {
		return nil, fmt.Errorf("cluster: queue %q: empty after %v", q.name, max(timeout, 0))
	}
	return decodeValue(r.Value)
}

// Len is how many values wait in the queue.
func (q *Queue) Len() (int, error) {
	r, err := coordCall(cellContext(), &ctlMsg{Op: "q_len", Name: q.name})
	if err != nil {
		return 0, err
	}
	return r.N, nil
}

// Variable is a cluster-wide named value, as dask's distributed.Variable. It lives in the
// scheduler and survives the clients that set it.
type Variable struct{ name string }

// NewVariable returns the cluster-wide variable of that name.
func NewVariable(name string) *Variable { return &Variable{name: name} }

// Set sets the value.
func (v *Variable) Set(x any) error {
	b, err := encodeValue(x)
	if err != nil {
		return fmt.Errorf("cluster: variable %q: %w", v.name, err)
	}
	_, err = coordCall(cellContext(), &ctlMsg{Op: "v_set", Name: v.name, Value: b})
	return err
}

// Get returns the value, waiting at most timeout until one is set (0: without limit; < 0:
// not at all); an unset variable past the timeout is an error.
func (v *Variable) Get(timeout time.Duration) (any, error) {
	r, err := coordCall(cellContext(), &ctlMsg{Op: "v_get", Name: v.name, Timeout: wireTimeout(timeout)})
	if err != nil {
		return nil, err
	}
	if !r.OK {
		return nil, fmt.Errorf("cluster: variable %q is not set", v.name)
	}
	return decodeValue(r.Value)
}

// Delete unsets the variable.
func (v *Variable) Delete() error {
	_, err := coordCall(cellContext(), &ctlMsg{Op: "v_del", Name: v.name})
	return err
}

// Event is a cluster-wide flag, as dask's distributed.Event: Wait blocks until it is Set.
type Event struct{ name string }

// NewEvent returns the cluster-wide event of that name (initially clear).
func NewEvent(name string) *Event { return &Event{name: name} }

// Set sets the flag and wakes every waiter.
func (e *Event) Set() error {
	_, err := coordCall(cellContext(), &ctlMsg{Op: "e_set", Name: e.name})
	return err
}

// Clear clears the flag.
func (e *Event) Clear() error {
	_, err := coordCall(cellContext(), &ctlMsg{Op: "e_clear", Name: e.name})
	return err
}

// Wait waits at most timeout (0: without limit; < 0: not at all) for the flag; it reports
// whether it is set.
func (e *Event) Wait(timeout time.Duration) (bool, error) {
	r, err := coordCall(cellContext(), &ctlMsg{Op: "e_wait", Name: e.name, Timeout: wireTimeout(timeout)})
	if err != nil {
		return false, err
	}
	return r.OK, nil
}

// IsSet reports whether the flag is set.
func (e *Event) IsSet() (bool, error) { return e.Wait(-1) }

// dataset is a published value or future.
type dataset struct {
	val *blob
	t   *task
}

// Publish names a value or a future on the scheduler, as dask's client.publish_dataset:
// any client of the cluster gets it with GetDataset. A published future's result stays on
// its worker until Unpublish.
func (c *Client) Publish(name string, x any) error {
	m := &ctlMsg{Op: "publish", Name: name}
	switch v := x.(type) {
	case *Future:
		if v.err != nil {
			return fmt.Errorf("cluster: publish %q: %w", name, v.err)
		}
		if v.c.s != c.s {
			return fmt.Errorf("cluster: publish %q: a future of another cluster", name)
		}
		m.Keys = []string{v.t.key}
	default:
		if isArray(x) {
			return fmt.Errorf("cluster: publish %q: a *gpuarray.Array is a graph in this process; publish "+
				"its values (x.Compute, then Values) or futures of them", name)
		}
		b, err := encodeValue(x)
		if err != nil {
			return fmt.Errorf("cluster: publish %q: %w", name, err)
		}
		m.Value = b
	}
	_, err := c.ctlCall(cellContext(), m)
	return err
}

// Unpublish removes a published name (a published future's result may then be released).
func (c *Client) Unpublish(name string) error {
	_, err := c.ctlCall(cellContext(), &ctlMsg{Op: "unpublish", Name: name})
	return err
}

// Datasets lists the published names, sorted.
func (c *Client) Datasets() ([]string, error) {
	r, err := c.ctlCall(cellContext(), &ctlMsg{Op: "datasets"})
	if err != nil {
		return nil, err
	}
	return r.Names, nil
}

// GetDataset returns what was published under name: the value, or, for a published future, a
// *Future of this client on the same result.
func (c *Client) GetDataset(name string) (any, error) {
	r, err := c.ctlCall(cellContext(), &ctlMsg{Op: "get_dataset", Name: name})
	if err != nil {
		return nil, err
	}
	if r.Key == "" {
		return decodeValue(r.Value)
	}
	switch b := c.s.(type) {
	case *scheduler:
		b.mu.Lock()
		t := b.tasks[r.Key]
		b.mu.Unlock()
		if t == nil {
			return nil, fmt.Errorf("cluster: dataset %q: its task %s is gone", name, r.Key)
		}
		return c.newFuture(t, nil), nil
	case *remote:
		b.mu.Lock()
		t := b.tasks[r.Key]
		if t == nil {
			t = &task{key: r.Key, state: StateMemory, changed: make(chan struct{})}
			b.tasks[r.Key] = t
		}
		b.mu.Unlock()
		return c.newFuture(t, nil), nil
	}
	return nil, fmt.Errorf("cluster: dataset %q: unknown backend", name)
}

// datasetCtl answers publish, unpublish, datasets and get_dataset.
func (s *scheduler) datasetCtl(h holder, m *ctlMsg) *ctlReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch m.Op {
	case "publish":
		if _, ok := s.datasets[m.Name]; ok {
			return &ctlReply{Err: fmt.Sprintf("a dataset %q is published already; Unpublish it first", m.Name)}
		}
		d := &dataset{val: m.Value}
		if len(m.Keys) == 1 {
			t := s.tasks[m.Keys[0]]
			if t == nil || t.forgotten {
				return &ctlReply{Err: fmt.Sprintf("publish %q: task %s is not known (released?)", m.Name, m.Keys[0])}
			}
			t.refs++
			d.t = t
		}
		s.datasets[m.Name] = d
		return &ctlReply{OK: true}
	case "unpublish":
		d := s.datasets[m.Name]
		if d == nil {
			return &ctlReply{Err: fmt.Sprintf("no dataset %q", m.Name)}
		}
		delete(s.datasets, m.Name)
		if d.t != nil && !d.t.forgotten {
			s.unrefLocked(d.t)
		}
		return &ctlReply{OK: true}
	case "datasets":
		names := make([]string, 0, len(s.datasets))
		for n := range s.datasets {
			names = append(names, n)
		}
		sort.Strings(names)
		return &ctlReply{OK: true, Names: names}
	case "get_dataset":
		d := s.datasets[m.Name]
		if d == nil {
			names := make([]string, 0, len(s.datasets))
			for n := range s.datasets {
				names = append(names, n)
			}
			return &ctlReply{Err: fmt.Sprintf("no dataset %q (published: %v)", m.Name, sortedStrings(names))}
		}
		if d.t == nil {
			return &ctlReply{OK: true, Value: d.val}
		}
		if d.t.forgotten {
			return &ctlReply{Err: fmt.Sprintf("dataset %q: its result was lost", m.Name)}
		}
		d.t.refs++
		if h.cc != nil {
			if h.cc.held[d.t.key] != nil {
				d.t.refs-- // the client holds it already
			} else {
				h.cc.held[d.t.key] = d.t
			}
		}
		return &ctlReply{OK: true, Key: d.t.key}
	}
	return &ctlReply{Err: "unknown dataset request " + m.Op}
}

func isArray(x any) bool {
	_, ok := x.(*gpuarray.Array)
	return ok
}
