package cluster

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"runtime"
	"strings"
	"sync"

	"github.com/gpunotes/gpunotes/display"
)

func cellContext() context.Context { return display.Context() }

// Source is a function given with its source code: Code declares Func and everything it uses
// (imports, types, funcs, vars, consts), ready to be evaluated in a fresh interpreter.
type Source struct {
	Code string
	Func string
}

var (
	resolverMu sync.RWMutex
	resolver   func(name string) (string, error)
)

// SetSourceResolver installs how a function name passed to Submit or Map becomes source: the
// kernel installs its session's SourceOf, which returns a top-level func of earlier cells with
// the declarations it uses.
func SetSourceResolver(f func(name string) (string, error)) {
	resolverMu.Lock()
	defer resolverMu.Unlock()
	resolver = f
}

// resolveFunc turns what the user passed as a function into source and a name.
func resolveFunc(fn any) (src, name string, err error) {
	switch f := fn.(type) {
	case Source:
		if f.Func == "" || f.Code == "" {
			return "", "", errors.New("cluster.Source needs both Code and Func")
		}
		return f.Code, f.Func, nil
	case *Source:
		if f == nil {
			return "", "", errors.New("nil *cluster.Source")
		}
		return resolveFunc(*f)
	case string:
		name = strings.TrimSpace(f)
		resolverMu.RLock()
		r := resolver
		resolverMu.RUnlock()
		if r == nil {
			return "", "", fmt.Errorf("cannot find the source of %q: no source resolver is installed "+
				"(the kernel installs one; elsewhere pass cluster.Source{Code: ..., Func: %q})", name, name)
		}
		src, err := r(name)
		if err != nil {
			return "", "", fmt.Errorf("cannot ship %q to a worker: %w (only a func declared at the top level "+
				"of a cell can be shipped; a closure over local variables cannot: make what it captures a parameter)", name, err)
		}
		return src, name, nil
	case nil:
		return "", "", errors.New("no function given")
	}
	v := reflect.ValueOf(fn)
	if v.Kind() == reflect.Func {
		fname := "a func value"
		if rf := runtime.FuncForPC(v.Pointer()); rf != nil && !strings.HasPrefix(rf.Name(), "reflect.") {
			fname = rf.Name()
		}
		return "", "", fmt.Errorf("cannot ship %s to a worker: func values (closures) cannot be serialized; "+
			"declare the function at the top level of a cell and pass its name as a string, "+
			"e.g. c.Submit(\"inc\", 1), passing what it captured as arguments", fname)
	}
	return "", "", fmt.Errorf("cannot ship a %T as a function: pass a func name (string) or a cluster.Source", fn)
}

// SubmitOption restricts or tunes a submitted task; pass it among Submit's or Map's arguments.
type SubmitOption struct {
	workers     []string
	resources   map[string]float64
	retries     int
	priority    int
	prioritySet bool
}

// Workers restricts a task to the named workers (names, addresses or GPU UUIDs), like
// dask's workers=.
func Workers(names ...string) SubmitOption { return SubmitOption{workers: names, retries: -1} }

// Resources makes a task need abstract resources of a worker while it runs: every worker
// offers "CPU" (its threads), GPU workers "GPU": 1, plus Options.Resources.
func Resources(r map[string]float64) SubmitOption { return SubmitOption{resources: r, retries: -1} }

// Retries sets how often a task is retried after its worker died.
func Retries(n int) SubmitOption { return SubmitOption{retries: n} }

// Priority orders a task among those ready to run: higher runs first (default 0), as dask's
// priority=. For Compute and Persist, use Client.WithPriority.
func Priority(n int) SubmitOption { return SubmitOption{priority: n, prioritySet: true, retries: -1} }

type submitConfig struct {
	workers     []string
	resources   map[string]float64
	retries     int
	priority    int
	prioritySet bool
}

func splitOptions(args []any, defRetries int) ([]any, submitConfig) {
	cfg := submitConfig{retries: defRetries}
	var rest []any
	for _, a := range args {
		o, ok := a.(SubmitOption)
		if !ok {
			if p, okp := a.(*SubmitOption); okp && p != nil {
				o, ok = *p, true
			}
		}
		if !ok {
			rest = append(rest, a)
			continue
		}
		cfg.workers = append(cfg.workers, o.workers...)
		if o.resources != nil {
			if cfg.resources == nil {
				cfg.resources = map[string]float64{}
			}
			for k, v := range o.resources {
				cfg.resources[k] += v
			}
		}
		if o.retries >= 0 {
			cfg.retries = o.retries
		}
		if o.prioritySet {
			cfg.priority, cfg.prioritySet = o.priority, true
		}
	}
	return rest, cfg
}

// Client submits work to a cluster's scheduler and gathers results. A LocalCUDA embeds one;
// Connect returns one for a scheduler elsewhere (`gpunotes scheduler`). Both have the same API.
type Client struct {
	s       backend
	retries int
	owner   *LocalCUDA
	pa      *persistedArrays
	// priority is given to the tasks this client submits (WithPriority).
	priority int
}

// backend is what a Client talks to: the scheduler in this process, or a remote one.
type backend interface {
	newKey(prefix string) string
	// add registers new tasks; it sets their state (and keeps it current) under locker().
	add(ts []*task) error
	fetch(ctx context.Context, key string) (*blob, error)
	cancel(keys []string)
	release(key string)
	locker() sync.Locker
	workerInfo() []WorkerInfo
	checkWorkers(names []string) error
	address() string
	// secure reports whether connections to the scheduler are under TLS.
	secure() bool
	dashboard() string
	controller
}

func newClient(s backend, retries int) *Client {
	if retries == 0 {
		retries = DefaultRetries
	}
	return &Client{s: s, retries: retries, pa: &persistedArrays{}}
}

// NewClient returns another client of the same cluster (each client's futures are its own).
func (c *LocalCUDA) NewClient() *Client {
	cl := newClient(c.sched, c.opts.Retries)
	cl.owner = c
	return cl
}

// Future is the result of a submitted task, held on a worker until gathered.
type Future struct {
	c     *Client
	t     *task
	err   error          // submission failed
	types []reflect.Type // the function's result types in the caller's session (typedResult)
	mu    sync.Mutex
	val   any
	got   bool
	rel   bool
}

// Key names the task.
func (f *Future) Key() string {
	if f.t == nil {
		return "invalid"
	}
	return f.t.key
}

// Status is the task's state: waiting, processing, memory, erred or cancelled.
func (f *Future) Status() string {
	if f.err != nil {
		return StateErred
	}
	mu := f.c.s.locker()
	mu.Lock()
	defer mu.Unlock()
	return f.t.state
}

// Done reports whether the task finished (in memory, erred or cancelled).
func (f *Future) Done() bool {
	st := f.Status()
	return st == StateMemory || st == StateErred || st == StateCancelled
}

func (f *Future) String() string {
	return fmt.Sprintf("<Future %s: %s>", f.Key(), f.Status())
}

// HTML renders the future for a cell.
func (f *Future) HTML() string {
	st := f.Status()
	color := map[string]string{StateMemory: "#2a7", StateErred: "#c33", StateCancelled: "#888"}[st]
	if color == "" {
		color = "#c80"
	}
	return fmt.Sprintf(`<span style="font-family:monospace"><b>Future</b> %s <span style="color:%s">%s</span></span>`,
		htmlEscape(f.Key()), color, st)
}

// Release tells the cluster the result is no longer needed; it is dropped from its worker.
// Futures that are garbage collected are released too.
func (f *Future) Release() {
	f.mu.Lock()
	if f.rel || f.t == nil {
		f.mu.Unlock()
		return
	}
	f.rel = true
	f.mu.Unlock()
	f.c.s.release(f.t.key)
}

func (s *scheduler) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t := s.tasks[key]; t != nil && !t.forgotten {
		s.unrefLocked(t)
	}
}

// Cancel cancels the task if it has not finished.
func (f *Future) Cancel() {
	if f.t != nil {
		f.c.s.cancel([]string{f.t.key})
	}
}

// wait blocks until the task is in memory, erred or cancelled.
func (f *Future) wait(ctx context.Context) error {
	if f.err != nil {
		return f.err
	}
	mu := f.c.s.locker()
	for {
		mu.Lock()
		st, ch, err := f.t.state, f.t.changed, f.t.err
		mu.Unlock()
		switch st {
		case StateMemory:
			return nil
		case StateErred, StateCancelled:
			return err
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("wait for %s: %w", f.t.key, ctx.Err())
		}
	}
}

// Result waits for the task and returns its value, fetched from the worker holding it. A nil
// ctx means the running cell's context (so an interrupt stops the wait).
func (f *Future) Result(ctx context.Context) (any, error) {
	ctx = ctxOr(ctx)
	f.mu.Lock()
	if f.got {
		v := f.val
		f.mu.Unlock()
		return v, nil
	}
	f.mu.Unlock()
	for attempt := 0; ; attempt++ {
		if err := f.wait(ctx); err != nil {
			return nil, err
		}
		b, err := f.c.s.fetch(ctx, f.t.key)
		if err != nil {
			if ctx.Err() != nil || attempt > 2*DefaultRetries+2 {
				return nil, err
			}
			continue // the worker died after finishing: the task runs again
		}
		v, err := decodeValue(b)
		if err != nil {
			return nil, fmt.Errorf("result of %s: %w", f.t.key, err)
		}
		if v, err = typedResult(b, v, f.types); err != nil {
			return nil, fmt.Errorf("result of %s: %w", f.t.key, err)
		}
		f.mu.Lock()
		f.val, f.got = v, true
		f.mu.Unlock()
		return v, nil
	}
}

func (c *Client) newFuture(t *task, err error) *Future {
	f := &Future{c: c, t: t, err: err}
	if t != nil {
		key := t.key
		s := c.s
		runtime.AddCleanup(f, func(k string) { s.release(k) }, key)
	}
	return f
}

// Submit runs fn(args...) on a worker and returns its future at once. fn is the name of a
// top-level func declared in a cell (a string), or a Source. Arguments may be futures (their
// results are passed; the task runs where they are when it can) and SubmitOptions such as
// Workers("gpu0"). Errors, including fn not being shippable, are reported by Result.
func (c *Client) Submit(fn any, args ...any) *Future {
	fs := c.submit(fn, [][]any{args})
	return fs[0]
}

// Map submits fn once per element of seqs (slices or arrays of equal length, zipped), like
// dask's client.map. SubmitOptions may be passed among seqs.
func (c *Client) Map(fn any, seqs ...any) []*Future {
	rest, _ := splitOptions(seqs, c.retries)
	var opts []any
	for _, s := range seqs {
		if _, ok := s.(SubmitOption); ok {
			opts = append(opts, s)
		}
	}
	n := -1
	for i, s := range rest {
		v := reflect.ValueOf(s)
		if v.Kind() != reflect.Slice && v.Kind() != reflect.Array {
			return []*Future{c.newFuture(nil, fmt.Errorf("cluster: Map argument %d is a %T, not a slice", i, s))}
		}
		if n >= 0 && v.Len() != n {
			return []*Future{c.newFuture(nil, fmt.Errorf("cluster: Map arguments have lengths %d and %d", n, v.Len()))}
		}
		n = v.Len()
	}
	if n <= 0 {
		return nil
	}
	calls := make([][]any, n)
	for i := 0; i < n; i++ {
		for _, s := range rest {
			calls[i] = append(calls[i], reflect.ValueOf(s).Index(i).Interface())
		}
		calls[i] = append(calls[i], opts...)
	}
	return c.submit(fn, calls)
}

func (c *Client) submit(fn any, calls [][]any) []*Future {
	fail := func(err error) []*Future {
		out := make([]*Future, len(calls))
		for i := range out {
			out[i] = c.newFuture(nil, fmt.Errorf("cluster: %w", err))
		}
		return out
	}
	src, name, err := resolveFunc(fn)
	if err != nil {
		return fail(err)
	}
	ts := make([]*task, 0, len(calls))
	for _, call := range calls {
		args, cfg := splitOptions(call, c.retries)
		if err := c.checkWorkers(cfg.workers); err != nil {
			return fail(err)
		}
		t := &task{key: c.s.newKey(name), restrict: cfg.workers, resources: cfg.resources, maxRetries: cfg.retries, refs: 1,
			priority: c.priority}
		if cfg.prioritySet {
			t.priority = cfg.priority
		}
		t.spec = taskSpec{Kind: "call", Source: src, Func: name}
		for i, a := range args {
			if f, ok := a.(*Future); ok {
				if f.err != nil {
					return fail(fmt.Errorf("argument %d: %w", i, f.err))
				}
				if f.c.s != c.s {
					return fail(fmt.Errorf("argument %d: a future of another cluster", i))
				}
				t.deps = append(t.deps, f.t)
				t.spec.Args = append(t.spec.Args, arg{Ref: f.t.key})
				continue
			}
			b, err := encodeValue(a)
			if err != nil {
				return fail(fmt.Errorf("argument %d: %w", i, err))
			}
			t.spec.Args = append(t.spec.Args, arg{Val: b})
		}
		ts = append(ts, t)
	}
	if err := c.s.add(ts); err != nil {
		return fail(err)
	}
	types := resultTypes(fn)
	out := make([]*Future, len(ts))
	for i, t := range ts {
		out[i] = c.newFuture(t, nil)
		out[i].types = types
	}
	return out
}

// checkWorkers rejects a restriction that names no worker of the cluster.
func (c *Client) checkWorkers(names []string) error { return c.s.checkWorkers(names) }

func (s *scheduler) locker() sync.Locker { return &s.mu }

func (s *scheduler) dashboard() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dashURL
}

// checkWorkers rejects a restriction that names no worker of the cluster.
func (s *scheduler) checkWorkers(names []string) error {
	if len(names) == 0 {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.checkWorkersLocked(names)
}

func (s *scheduler) checkWorkersLocked(names []string) error {
	for _, n := range names {
		if _, ok := s.workers[n]; ok {
			continue
		}
		if _, ok := s.deaths[n]; ok {
			continue // restarting
		}
		found := false
		for _, w := range s.workers {
			if w.addr == n || w.info.GPU == n {
				found = true
			}
		}
		if !found {
			known := make([]string, 0, len(s.workers))
			for k := range s.workers {
				known = append(known, k)
			}
			return fmt.Errorf("Workers(%q): no such worker (workers: %s)", n, strings.Join(sortedStrings(known), ", "))
		}
	}
	return nil
}

// Gather waits for futures and returns their results in order (the running cell's context
// bounds the wait). In a cell it shows a progress bar.
func (c *Client) Gather(fs []*Future) ([]any, error) {
	return c.GatherContext(cellContext(), fs)
}

// GatherContext is Gather with an explicit context.
func (c *Client) GatherContext(ctx context.Context, fs []*Future) ([]any, error) {
	ctx = ctxOr(ctx)
	out := make([]any, len(fs))
	var p *display.Progress
	if len(fs) > 1 {
		p = display.NewProgress("gather", int64(len(fs)))
		defer p.Done()
	}
	errs := make([]error, len(fs))
	sem := make(chan struct{}, 16)
	var wg sync.WaitGroup
	for i, f := range fs {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = f.Result(ctx)
			if p != nil {
				p.Add(1)
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// Wait blocks until every future is done; it returns the failures joined (nil if none).
func (c *Client) Wait(fs []*Future) error {
	ctx := cellContext()
	var errs []error
	for _, f := range fs {
		if err := f.wait(ctx); err != nil {
			errs = append(errs, err)
			if ctx.Err() != nil {
				break
			}
		}
	}
	return errors.Join(errs...)
}

// AsCompleted returns a channel that yields each future as it finishes; it is closed after
// the last one.
func (c *Client) AsCompleted(fs []*Future) <-chan *Future {
	ch := make(chan *Future, len(fs))
	ctx := cellContext()
	var wg sync.WaitGroup
	for _, f := range fs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = f.wait(ctx)
			ch <- f
		}()
	}
	go func() {
		wg.Wait()
		close(ch)
	}()
	return ch
}

// Cancel cancels futures that have not finished.
func (c *Client) Cancel(fs ...*Future) {
	keys := make([]string, 0, len(fs))
	for _, f := range fs {
		if f.t != nil {
			keys = append(keys, f.t.key)
		}
	}
	c.s.cancel(keys)
}
