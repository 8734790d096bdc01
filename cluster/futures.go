package cluster

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// Scatter places values on the cluster's workers, each whole on one worker (spread over the
// workers), and returns their futures, as dask's scatter does: pass them to Submit or Map and
// the tasks run where the values are. A value lost with its worker is placed again from the
// copy the scheduler keeps. A *gpuarray.Array goes computed, whole; to spread an array's
// chunks over the workers, persist it there instead: x.Persist(gpuarray.On(c)).
func (c *Client) Scatter(values ...any) ([]*Future, error) {
	ts := make([]*task, len(values))
	for i, v := range values {
		if f, ok := v.(*Future); ok {
			return nil, fmt.Errorf("cluster: Scatter: value %d is a future (%s): it is on the cluster already", i, f.Key())
		}
		b, err := encodeValue(v)
		if err != nil {
			return nil, fmt.Errorf("cluster: Scatter: value %d: %w", i, err)
		}
		ts[i] = &task{key: c.s.newKey(fmt.Sprintf("scatter-%T", v)), maxRetries: c.retries, refs: 1,
			spec: taskSpec{Kind: "value", Args: []arg{{Val: b}}}}
	}
	if err := c.s.add(ts); err != nil {
		return nil, fmt.Errorf("cluster: Scatter: %w", err)
	}
	out := make([]*Future, len(ts))
	for i, t := range ts {
		out[i] = c.newFuture(t, nil)
	}
	return out, nil
}

// Persist computes x on the cluster and keeps its chunks on the workers that computed them,
// as dask's client.persist does: x.Persist(gpuarray.On(c)).
func (c *Client) Persist(x *gpuarray.Array, opts ...gpuarray.ComputeOption) *gpuarray.Array {
	return c.persistTracked(func() *gpuarray.Array {
		return x.Persist(append(append([]gpuarray.ComputeOption{}, opts...), gpuarray.On(c))...)
	})
}

// ArrayFuture is an array being computed on the cluster while the cell goes on (Compute).
type ArrayFuture struct {
	cancel  context.CancelFunc
	started time.Time
	done    chan struct{}

	mu       sync.Mutex
	finished time.Time
	ndone    int
	total    int
	res      *gpuarray.Array
	err      error
}

// Compute starts computing x on the cluster and returns its future at once; the cell goes
// on. Result waits for the array (materialized in this process, as x.Compute returns it).
// opts are further Compute options (a memory limit, progress); the scheduler is the cluster.
func (c *Client) Compute(x *gpuarray.Array, opts ...gpuarray.ComputeOption) *ArrayFuture {
	ctx, cancel := context.WithCancel(context.Background())
	f := &ArrayFuture{cancel: cancel, started: time.Now(), done: make(chan struct{})}
	all := append(append([]gpuarray.ComputeOption{}, opts...),
		gpuarray.On(c), gpuarray.WithContext(ctx), gpuarray.NoProgressBar(),
		gpuarray.WithProgress(func(done, total int) {
			f.mu.Lock()
			f.ndone, f.total = done, total
			f.mu.Unlock()
		}))
	go func() {
		defer close(f.done)
		defer cancel()
		r, err := x.Compute(all...)
		f.mu.Lock()
		f.res, f.err, f.finished = r, err, time.Now()
		f.mu.Unlock()
	}()
	return f
}

// Result waits for the array (a nil ctx: the running cell's context, so an interrupt stops
// the wait, not the computation).
func (f *ArrayFuture) Result(ctx context.Context) (*gpuarray.Array, error) {
	ctx = ctxOr(ctx)
	select {
	case <-f.done:
	case <-ctx.Done():
		return nil, fmt.Errorf("wait for the array: %w", ctx.Err())
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.res, f.err
}

// Done reports whether the computation finished (computed, failed or cancelled).
func (f *ArrayFuture) Done() bool {
	select {
	case <-f.done:
		return true
	default:
		return false
	}
}

// Cancel stops the computation; Result then returns the cancellation.
func (f *ArrayFuture) Cancel() { f.cancel() }

// Status is "pending" while the array is computed, then "finished" or "error".
func (f *ArrayFuture) Status() string {
	if !f.Done() {
		return "pending"
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return "error"
	}
	return "finished"
}

// Progress returns the chunk tasks finished and their total so far.
func (f *ArrayFuture) Progress() (done, total int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.ndone, f.total
}

func (f *ArrayFuture) elapsed() time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.finished.IsZero() {
		return f.finished.Sub(f.started)
	}
	return time.Since(f.started)
}

func (f *ArrayFuture) String() string {
	d, t := f.Progress()
	s := fmt.Sprintf("<ArrayFuture: %s, %d/%d chunk tasks, %.1f s>", f.Status(), d, t, f.elapsed().Seconds())
	if f.Status() == "error" {
		f.mu.Lock()
		s = fmt.Sprintf("<ArrayFuture: error: %v>", f.err)
		f.mu.Unlock()
	}
	return s
}

// HTML renders the future's status and progress for a cell.
func (f *ArrayFuture) HTML() string {
	st := f.Status()
	d, t := f.Progress()
	color := map[string]string{"finished": "#2a7", "error": "#c33"}[st]
	if color == "" {
		color = "#c80"
	}
	pct := 0.0
	if t > 0 {
		pct = 100 * float64(d) / float64(t)
	}
	detail := fmt.Sprintf("%d/%d chunk tasks, %.1f s", d, t, f.elapsed().Seconds())
	if st == "error" {
		f.mu.Lock()
		detail = f.err.Error()
		f.mu.Unlock()
	}
	return fmt.Sprintf(`<div style="font-family:monospace"><b>ArrayFuture</b> <span style="color:%s">%s</span> `+
		`<span style="display:inline-block;width:120px;height:8px;background:#ddd;vertical-align:middle">`+
		`<span style="display:block;width:%.0f%%;height:8px;background:%s"></span></span> %s</div>`,
		color, st, pct, color, htmlEscape(detail))
}
