package cluster

import (
	"context"
	"fmt"
	"time"
)

// FireAndForget lets the futures' tasks run to the end even when nobody holds them any more,
// as dask's fire_and_forget: the scheduler keeps them until they finish, then drops their
// results. Use it for tasks run for their side effects.
func (c *Client) FireAndForget(fs ...*Future) error {
	var keys []string
	for _, f := range fs {
		if f.err != nil {
			return fmt.Errorf("cluster: FireAndForget: %w", f.err)
		}
		keys = append(keys, f.t.key)
	}
	_, err := c.ctlCall(cellContext(), &ctlMsg{Op: "faf", Keys: keys})
	return err
}

func (s *scheduler) fireAndForget(keys []string) *ctlReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range keys {
		t := s.tasks[k]
		if t == nil || t.forgotten {
			return &ctlReply{Err: fmt.Sprintf("task %s is not known (released?)", k)}
		}
		if t.faf {
			continue
		}
		t.faf = true
		t.refs++
		s.finishedFAF(t) // finished already
	}
	return &ctlReply{OK: true}
}

// WithPriority returns a client of the same cluster whose tasks have priority n: Submit, Map,
// Compute, Persist and MapBlocks through it go before ready tasks of lower priority (a
// Priority option on Submit or Map overrides it).
func (c *Client) WithPriority(n int) *Client {
	cp := *c
	cp.priority = n
	return &cp
}

// Wait conditions, as dask's return_when.
const (
	FirstCompleted = "FIRST_COMPLETED"
	AllCompleted   = "ALL_COMPLETED"
)

// WaitFor waits until the first future finishes (FirstCompleted) or all of them
// (AllCompleted), or timeout passes (0: no limit but the cell's context), and splits the
// futures into done and not done, as dask's wait. Passing the timeout is not an error; an
// interrupt is.
func (c *Client) WaitFor(fs []*Future, returnWhen string, timeout time.Duration) (done, notDone []*Future, err error) {
	if returnWhen == "" {
		returnWhen = AllCompleted
	}
	if returnWhen != FirstCompleted && returnWhen != AllCompleted {
		return nil, fs, fmt.Errorf("cluster: WaitFor: returnWhen %q: want FirstCompleted or AllCompleted", returnWhen)
	}
	ctx := cellContext()
	var cancel context.CancelFunc
	if timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, timeout)
	} else {
		ctx, cancel = context.WithCancel(ctx)
	}
	defer cancel()
	finished := make(chan int, len(fs))
	for i, f := range fs {
		go func() {
			if f.wait(ctx); f.Done() {
				finished <- i
			}
		}()
	}
	need := len(fs)
	if returnWhen == FirstCompleted && need > 0 {
		need = 1
	}
	for n := 0; n < need; n++ {
		select {
		case <-finished:
		case <-ctx.Done():
			n = need
		}
	}
	for _, f := range fs {
		if f.Done() {
			done = append(done, f)
		} else {
			notDone = append(notDone, f)
		}
	}
	if parent := cellContext(); parent.Err() != nil {
		return done, notDone, fmt.Errorf("cluster: WaitFor: %w", parent.Err())
	}
	return done, notDone, nil
}

// Completed is one finished future with its result (AsCompletedResults).
type Completed struct {
	Future *Future
	Value  any
	Err    error
}

// AsCompletedResults yields each future with its result as it finishes, as dask's
// as_completed(with_results=True); the channel is closed after the last.
func (c *Client) AsCompletedResults(fs []*Future) <-chan Completed {
	out := make(chan Completed, len(fs))
	ctx := cellContext()
	go func() {
		defer close(out)
		for f := range c.AsCompleted(fs) {
			v, err := f.Result(ctx)
			out <- Completed{Future: f, Value: v, Err: err}
		}
	}()
	return out
}
