package cluster

import (
	"context"
	"crypto/tls"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"
)

// logRing keeps a worker's last log lines for WorkerLogs.
type logRing struct {
	name string
	mu   sync.Mutex
	buf  []string
}

const logRingLen = 1000

func newLogRing(name string) *logRing { return &logRing{name: name} }

func (r *logRing) printf(format string, args ...any) {
	line := time.Now().Format("15:04:05.000") + " " + fmt.Sprintf(format, args...)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.buf) >= logRingLen {
		n := copy(r.buf, r.buf[len(r.buf)-logRingLen/2:])
		r.buf = r.buf[:n]
	}
	r.buf = append(r.buf, line)
}

func (r *logRing) lines(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if n <= 0 || n > len(r.buf) {
		n = len(r.buf)
	}
	return append([]string(nil), r.buf[len(r.buf)-n:]...)
}

// pull fetches results from peers (Who: key -> data address) into this worker's store, for a
// retirement, a rebalance or a replica; it answers "pulled" with the keys it holds now.
func (w *worker) pull(f *frame) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	byPeer := map[string][]string{}
	for k, addr := range f.Task.Who {
		if !w.store.has(k) {
			byPeer[addr] = append(byPeer[addr], k)
		}
	}
	var errs []string
	for addr, keys := range byPeer {
		sort.Strings(keys)
		tlsCfg := w.fetchTLS()
		got, err := fetchFrom(ctx, addr, w.cfg.Token, keys, tlsCfg)
		if err != nil {
			errs = append(errs, err.Error())
			continue
		}
		for k, b := range got {
			w.store.putBlob(k, b)
		}
	}
	var have []string
	for k := range f.Task.Who {
		if w.store.has(k) {
			have = append(have, k)
		}
	}
	sort.Strings(have)
	r := &frame{Op: "pulled", ReqID: f.ReqID, Keys: have, Moved: w.store.takeMoves()}
	if len(errs) > 0 {
		sort.Strings(errs)
		r.Reason = fmt.Sprint(errs)
	}
	w.logs.printf("took %d results from peers for a move", len(have))
	_ = w.l.send(r)
}

// runFunc runs a shipped function outside the task threads (Client.RunOnWorkers, plugins)
// and answers "ran" with its result.
func (w *worker) runFunc(f *frame) {
	m := f.Ctl
	r := &frame{Op: "ran", ReqID: f.ReqID}
	defer func() { _ = w.l.send(r) }()
	if m == nil || w.ev == nil {
		r.Err = "this worker has no evaluator for shipped functions"
		return
	}
	args := make([]any, len(m.Args))
	for i, a := range m.Args {
		v, err := decodeValue(a.Val)
		if err != nil {
			r.Err = fmt.Sprintf("argument %d: %v", i, err)
			return
		}
		args[i] = v
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res, trace, err := w.callOne(ctx, m.Source, m.Func, args)
	if err != nil {
		r.Err, r.Trace = err.Error(), trace
		w.logs.printf("%s failed: %v", m.Func, err)
		return
	}
	if m.Op == "unplugin" {
		w.pluginMu.Lock()
		kept := w.teardowns[:0]
		for _, p := range w.teardowns {
			if p.Name != m.Name {
				kept = append(kept, p)
			}
		}
		w.teardowns = kept
		w.pluginMu.Unlock()
	}
	if m.Op == "plugin" && len(m.Names) == 1 && m.Names[0] != "" && len(m.Keys) == 1 {
		w.pluginMu.Lock()
		w.teardowns = append(w.teardowns, pluginSpec{Name: m.Name, TeardownSource: m.Keys[0], Teardown: m.Names[0]})
		w.pluginMu.Unlock()
		w.logs.printf("plugin %s set up", m.Name)
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
		r.Err = fmt.Sprintf("result cannot be sent: %v", err)
		return
	}
	r.Blob = b
}

func (w *worker) callOne(ctx context.Context, src, fn string, args []any) (res []any, trace string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	return w.callShipped(ctx, &taskMsg{Spec: taskSpec{Kind: "call", Source: src, Func: fn}}, args)
}

func (w *worker) fetchTLS() *tls.Config {
	if w.sec != nil {
		return w.sec.fetch
	}
	return nil
}

// runPluginTeardowns runs the teardown functions of the plugins set up on this worker, newest
// first, as the worker leaves.
func (w *worker) runPluginTeardowns() {
	w.pluginMu.Lock()
	ps := w.teardowns
	w.teardowns = nil
	w.pluginMu.Unlock()
	for i := len(ps) - 1; i >= 0; i-- {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if _, _, err := w.callOne(ctx, ps[i].TeardownSource, ps[i].Teardown, nil); err != nil {
			fmt.Fprintf(os.Stderr, "gpunotes worker %s: plugin %s teardown: %v\n", w.cfg.Name, ps[i].Name, err)
		}
		cancel()
	}
}

// pluginSpec is a worker plugin: functions of Source run on every worker as it joins (Setup)
// and as it leaves or the plugin is removed (Teardown).
type pluginSpec struct {
	Name, Source, Setup, Teardown, TeardownSource string
}
