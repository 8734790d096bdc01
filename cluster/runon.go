package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
)

var (
	schedEvalMu sync.RWMutex
	schedEval   Evaluator
)

// SetSchedulerEvaluator installs the interpreter RunOnScheduler uses in the process that runs
// the scheduler (the kernel for a LocalCUDA, `gpunotes scheduler` for a standalone one).
func SetSchedulerEvaluator(ev Evaluator) {
	schedEvalMu.Lock()
	defer schedEvalMu.Unlock()
	schedEval = ev
}

// shippedCall turns a function and its arguments into a control request (Workers options
// among args restrict it).
func shippedCall(op string, fn any, args []any) (*ctlMsg, error) {
	src, name, err := resolveFunc(fn)
	if err != nil {
		return nil, err
	}
	rest, cfg := splitOptions(args, 0)
	m := &ctlMsg{Op: op, Source: src, Func: name, Names: cfg.workers}
	for i, a := range rest {
		if _, ok := a.(*Future); ok {
			return nil, fmt.Errorf("argument %d is a future: %s runs outside the task graph; pass its Result", i, op)
		}
		b, err := encodeValue(a)
		if err != nil {
			return nil, fmt.Errorf("argument %d: %w", i, err)
		}
		m.Args = append(m.Args, arg{Val: b})
	}
	return m, nil
}

// RunOnWorkers calls fn(args...) on every worker at once, outside the task threads, and
// returns each worker's result by name, as dask's client.run. fn is a func name of a cell (or
// a Source), as for Submit; a Workers option among args picks the workers. Failures are joined
// into the error; the results of the others are still returned. (Client.Run is the
// gpuarray scheduler's entry point, hence the name.)
func (c *Client) RunOnWorkers(fn any, args ...any) (map[string]any, error) {
	m, err := shippedCall("run", fn, args)
	if err != nil {
		return nil, fmt.Errorf("cluster: RunOnWorkers: %w", err)
	}
	r, err := c.s.control(cellContext(), m)
	if err != nil {
		return nil, fmt.Errorf("cluster: RunOnWorkers: %w", err)
	}
	out := map[string]any{}
	for name, b := range r.Values {
		v, err := decodeValue(b)
		if err != nil {
			r.Errs[name] = err.Error()
			continue
		}
		out[name] = v
	}
	var errs []error
	if r.Err != "" {
		errs = append(errs, errors.New(r.Err))
	}
	for _, name := range sortedKeys(r.Errs) {
		errs = append(errs, fmt.Errorf("worker %s: %s", name, r.Errs[name]))
	}
	if len(errs) > 0 {
		return out, fmt.Errorf("cluster: RunOnWorkers %s: %w", m.Func, errors.Join(errs...))
	}
	return out, nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// RunOnScheduler calls fn(args...) in the scheduler's process, as dask's
// client.run_on_scheduler.
func (c *Client) RunOnScheduler(fn any, args ...any) (any, error) {
	m, err := shippedCall("run_scheduler", fn, args)
	if err != nil {
		return nil, fmt.Errorf("cluster: RunOnScheduler: %w", err)
	}
	r, err := c.ctlCall(cellContext(), m)
	if err != nil {
		return nil, err
	}
	return decodeValue(r.Value)
}

func (s *scheduler) runOnScheduler(ctx context.Context, m *ctlMsg) *ctlReply {
	schedEvalMu.RLock()
	ev := schedEval
	schedEvalMu.RUnlock()
	if ev == nil {
		return &ctlReply{Err: "this scheduler's process has no interpreter for shipped functions (cluster.SetSchedulerEvaluator installs one)"}
	}
	args := make([]any, len(m.Args))
	for i, a := range m.Args {
		v, err := decodeValue(a.Val)
		if err != nil {
			return &ctlReply{Err: fmt.Sprintf("argument %d: %v", i, err)}
		}
		args[i] = v
	}
	res, err := ev.Call(ctx, m.Source, m.Func, args)
	if err != nil {
		return &ctlReply{Err: err.Error()}
	}
	if n := len(res); n > 0 {
		if e, ok := res[n-1].(error); ok {
			return &ctlReply{Err: e.Error()}
		}
	}
	var v any
	switch len(res) {
	case 0:
	case 1:
		v = res[0]
	default:
		v = res
	}
	b, err := encodeValue(v)
	if err != nil {
		return &ctlReply{Err: fmt.Sprintf("result cannot be sent: %v", err)}
	}
	return &ctlReply{OK: true, Value: b}
}

// runOnWorkers fans a run request out to the workers (m.Names, or all).
func (s *scheduler) runOnWorkers(ctx context.Context, m *ctlMsg) *ctlReply {
	s.mu.Lock()
	var ws []*wconn
	if len(m.Names) > 0 {
		var err error
		if ws, err = s.workersNamedLocked(m.Names); err != nil {
			s.mu.Unlock()
			return &ctlReply{Err: err.Error()}
		}
	} else {
		for _, w := range s.workers {
			ws = append(ws, w)
		}
	}
	s.mu.Unlock()
	r := &ctlReply{OK: true, Values: map[string]*blob{}, Errs: map[string]string{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := s.ask(ctx, w, &frame{Op: "run", Ctl: m})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				msg := err.Error()
				if a != nil && a.Trace != "" {
					msg += "\n" + a.Trace
				}
				r.Errs[w.info.Name] = msg
				return
			}
			r.Values[w.info.Name] = a.Blob
		}()
	}
	wg.Wait()
	return r
}

// RegisterWorkerPlugin runs setup (a func of a cell, no arguments) on every worker now and on
// every worker that joins later, and teardown ("" for none) as each worker leaves or when the
// plugin is unregistered, as dask's worker plugins. Both are top-level funcs of cells (names),
// or setup is a Source whose Code declares teardown too. A name registered again replaces the
// plugin (its old teardown runs first).
func (c *Client) RegisterWorkerPlugin(name string, setup any, teardown string) error {
	src, fn, err := resolveFunc(setup)
	if err != nil {
		return fmt.Errorf("cluster: plugin %s: %w", name, err)
	}
	tsrc := src
	if _, isSrc := setup.(Source); !isSrc && teardown != "" {
		if tsrc, _, err = resolveFunc(teardown); err != nil {
			return fmt.Errorf("cluster: plugin %s teardown: %w", name, err)
		}
	}
	_, err = c.ctlCall(cellContext(), &ctlMsg{Op: "plugin", Name: name, Source: src, Func: fn, Names: []string{teardown}, Keys: []string{tsrc}})
	return err
}

// UnregisterWorkerPlugin runs the plugin's teardown on every worker and stops setting it up
// on new ones.
func (c *Client) UnregisterWorkerPlugin(name string) error {
	_, err := c.ctlCall(cellContext(), &ctlMsg{Op: "unplugin", Name: name})
	return err
}

// plugin registers or removes a worker plugin.
func (s *scheduler) plugin(ctx context.Context, m *ctlMsg) *ctlReply {
	s.mu.Lock()
	var old *pluginSpec
	for i, p := range s.plugins {
		if p.Name == m.Name {
			p := p
			old = &p
			s.plugins = append(s.plugins[:i], s.plugins[i+1:]...)
			break
		}
	}
	var ws []*wconn
	for _, w := range s.workers {
		ws = append(ws, w)
	}
	var p pluginSpec
	if m.Op == "plugin" {
		p = pluginSpec{Name: m.Name, Source: m.Source, Setup: m.Func}
		if len(m.Names) == 1 && len(m.Keys) == 1 {
			p.Teardown, p.TeardownSource = m.Names[0], m.Keys[0]
		}
		s.plugins = append(s.plugins, p)
	}
	s.mu.Unlock()
	if m.Op == "unplugin" && old == nil {
		return &ctlReply{Err: fmt.Sprintf("no worker plugin %q", m.Name)}
	}
	errs := map[string]string{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if old != nil && old.Teardown != "" {
				if _, err := s.ask(ctx, w, &frame{Op: "run", Ctl: &ctlMsg{Op: "unplugin", Name: old.Name, Source: old.TeardownSource, Func: old.Teardown}}); err != nil {
					mu.Lock()
					errs[w.info.Name] = "teardown: " + err.Error()
					mu.Unlock()
				}
			}
			if m.Op == "plugin" {
				if err := s.setupPlugin(ctx, w, p); err != nil {
					mu.Lock()
					errs[w.info.Name] = err.Error()
					mu.Unlock()
				}
			}
		}()
	}
	wg.Wait()
	if len(errs) > 0 {
		if m.Op == "plugin" {
			// A plugin whose setup fails is not set up on later workers either.
			s.mu.Lock()
			for i, q := range s.plugins {
				if q.Name == m.Name {
					s.plugins = append(s.plugins[:i], s.plugins[i+1:]...)
					break
				}
			}
			s.mu.Unlock()
		}
		var parts []string
		for _, k := range sortedKeys(errs) {
			parts = append(parts, k+": "+errs[k])
		}
		return &ctlReply{Err: "plugin " + m.Name + ": " + strings.Join(parts, "; ")}
	}
	return &ctlReply{OK: true}
}

func (s *scheduler) setupPlugin(ctx context.Context, w *wconn, p pluginSpec) error {
	_, err := s.ask(ctx, w, &frame{Op: "run", Ctl: &ctlMsg{Op: "plugin", Name: p.Name, Source: p.Source, Func: p.Setup,
		Names: []string{p.Teardown}, Keys: []string{p.TeardownSource}}})
	return err
}

// setupPlugins sets up the registered plugins on a worker that joined.
func (s *scheduler) setupPlugins(w *wconn, ps []pluginSpec) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for _, p := range ps {
		if err := s.setupPlugin(ctx, w, p); err != nil {
			s.logf("worker %s: plugin %s: %v", w.info.Name, p.Name, err)
		}
	}
}

// taskStream returns the finished tasks whose run ended after since.
func (s *scheduler) taskStream(since time.Time) *ctlReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []TaskEvent
	for _, ev := range s.stream {
		if !ev.Stop.Before(since) {
			out = append(out, ev)
		}
	}
	return &ctlReply{OK: true, Stream: out}
}

// workerLogs asks every worker for its last n log lines.
func (s *scheduler) workerLogs(ctx context.Context, n int) *ctlReply {
	s.mu.Lock()
	var ws []*wconn
	for _, w := range s.workers {
		ws = append(ws, w)
	}
	s.mu.Unlock()
	r := &ctlReply{OK: true, Where: map[string][]string{}, Errs: map[string]string{}}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			a, err := s.ask(ctx, w, &frame{Op: "logs", Ctl: &ctlMsg{N: n}})
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				r.Errs[w.info.Name] = err.Error()
				return
			}
			r.Where[w.info.Name] = a.Keys
		}()
	}
	wg.Wait()
	return r
}
