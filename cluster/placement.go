package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// waitWorkers waits until at least n workers are connected.
func (s *scheduler) waitWorkers(ctx context.Context, n int, timeout time.Duration) *ctlReply {
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for {
		s.mu.Lock()
		have, ch, closed := len(s.workers), s.changed, s.closed
		names := make([]string, 0, have)
		for k := range s.workers {
			names = append(names, k)
		}
		s.mu.Unlock()
		if have >= n {
			return &ctlReply{OK: true, N: have}
		}
		if closed {
			return &ctlReply{Err: "the cluster is closed"}
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return &ctlReply{N: have, Err: fmt.Sprintf("%d of %d workers after %v (connected: %s)",
				have, n, timeout, strings.Join(sortedStrings(names), ", "))}
		}
	}
}

// workersNamed resolves names (or addresses, or GPU UUIDs) to connected workers.
func (s *scheduler) workersNamedLocked(names []string) ([]*wconn, error) {
	var out []*wconn
	for _, n := range names {
		w := s.workers[n]
		if w == nil {
			for _, x := range s.workers {
				if x.addr == n || x.info.GPU == n && n != "" {
					w = x
				}
			}
		}
		if w == nil {
			known := make([]string, 0, len(s.workers))
			for k := range s.workers {
				known = append(known, k)
			}
			return nil, fmt.Errorf("no worker %q (workers: %s)", n, strings.Join(sortedStrings(known), ", "))
		}
		out = append(out, w)
	}
	return out, nil
}

// heldBytes is what w holds as the primary holder or a replica.
func heldBytes(w *wconn) int64 {
	var n int64
	for _, t := range w.memory {
		n += t.size
	}
	return n
}

// retire moves the results held by the named workers to the others, then (with
// closeWorkers) tells them to exit. before, when set, runs for each worker before it is told
// (a local cluster stops its nanny there, so that the worker is not restarted).
func (s *scheduler) retire(ctx context.Context, names []string, closeWorkers bool) error {
	return s.retireThen(ctx, names, closeWorkers, nil)
}

func (s *scheduler) retireThen(ctx context.Context, names []string, closeWorkers bool, before func(name string)) error {
	s.mu.Lock()
	ws, err := s.workersNamedLocked(names)
	if err != nil {
		s.mu.Unlock()
		return err
	}
	for _, w := range ws {
		w.retiring = true
	}
	left := 0
	for _, w := range s.workers {
		if !w.retiring {
			left++
		}
	}
	s.mu.Unlock()
	undo := func() {
		s.mu.Lock()
		for _, w := range ws {
			w.retiring = false
		}
		s.scheduleLocked()
		s.mu.Unlock()
	}
	// Let running tasks finish, so that their results move too.
	for _, w := range ws {
		for {
			s.mu.Lock()
			busy, gone, ch := len(w.processing), w.gone, s.changed
			s.mu.Unlock()
			if busy == 0 || gone {
				break
			}
			select {
			case <-ch:
			case <-time.After(500 * time.Millisecond):
			case <-ctx.Done():
				undo()
				return fmt.Errorf("retire %s: %w", w.info.Name, ctx.Err())
			}
		}
	}
	for _, w := range ws {
		s.mu.Lock()
		var ts []*task
		for _, t := range sortedTasks(w.memory) {
			if t.worker == w {
				ts = append(ts, t)
			} else {
				t.replicas = dropWorker(t.replicas, w)
				delete(w.memory, t.key)
			}
		}
		s.mu.Unlock()
		if len(ts) > 0 && left == 0 {
			undo()
			return fmt.Errorf("retire %v: %d results are kept there and no other worker would be left to take them", names, len(ts))
		}
		if err := s.moveOff(ctx, w, ts); err != nil {
			undo()
			return fmt.Errorf("retire %s: %w", w.info.Name, err)
		}
	}
	if !closeWorkers {
		return nil
	}
	for _, w := range ws {
		if before != nil {
			before(w.info.Name)
		}
		s.mu.Lock()
		s.logf("worker %s retired", w.info.Name)
		w.out.push(&frame{Op: "close"})
		s.mu.Unlock()
	}
	return nil
}

// moveOff moves the results ts that w holds to the other workers, evening out their bytes.
func (s *scheduler) moveOff(ctx context.Context, w *wconn, ts []*task) error {
	if len(ts) == 0 {
		return nil
	}
	s.mu.Lock()
	var targets []*wconn
	load := map[*wconn]int64{}
	for _, x := range s.workers {
		if x != w && !x.retiring && !x.gone && x.dataAddr != "" {
			targets = append(targets, x)
			load[x] = heldBytes(x)
		}
	}
	if len(targets) == 0 {
		s.mu.Unlock()
		return errors.New("no worker to move results to")
	}
	sort.Slice(targets, func(i, j int) bool { return targets[i].info.Name < targets[j].info.Name })
	plan := map[*wconn][]*task{}
	for _, t := range ts {
		best := targets[0]
		for _, x := range targets[1:] {
			if load[x] < load[best] {
				best = x
			}
		}
		load[best] += t.size + 1
		plan[best] = append(plan[best], t)
	}
	s.mu.Unlock()
	for _, x := range targets {
		if len(plan[x]) == 0 {
			continue
		}
		if err := s.copyTo(ctx, x, plan[x], false); err != nil {
			return err
		}
	}
	return nil
}

// copyTo has target fetch the results ts from their holders; with replica it keeps them as
// further copies, otherwise they move (the old holder releases them).
func (s *scheduler) copyTo(ctx context.Context, target *wconn, ts []*task, replica bool) error {
	s.mu.Lock()
	who := map[string]string{}
	from := map[string]*wconn{}
	for _, t := range ts {
		if t.state == StateMemory && t.worker != nil && t.worker != target && t.worker.dataAddr != "" {
			who[t.key] = t.worker.dataAddr
			from[t.key] = t.worker
		}
	}
	s.mu.Unlock()
	if len(who) == 0 {
		return nil
	}
	a, err := s.ask(ctx, target, &frame{Op: "pull", Task: &taskMsg{Who: who}})
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	target.moved(nil)
	for _, k := range a.Keys {
		t := s.tasks[k]
		if t == nil || t.forgotten || t.state != StateMemory || target.gone {
			target.out.push(&frame{Op: "release", Keys: []string{k}})
			continue
		}
		target.memory[k] = t
		if replica {
			if t.worker != target && !hasWorker(t.replicas, target) {
				t.replicas = append(t.replicas, target)
			}
			continue
		}
		if old := from[k]; old != nil && t.worker == old {
			delete(old.memory, k)
			old.out.push(&frame{Op: "release", Keys: []string{k}})
			t.worker = target
			t.replicas = dropWorker(t.replicas, target)
		}
	}
	for k, tier := range a.Moved {
		if t := target.memory[k]; t != nil && t.worker == target {
			t.tier = tier
		}
	}
	s.stateChanged()
	if a.Reason != "" {
		return fmt.Errorf("%s could not fetch every result: %s", target.info.Name, a.Reason)
	}
	return nil
}

func hasWorker(ws []*wconn, w *wconn) bool {
	for _, x := range ws {
		if x == w {
			return true
		}
	}
	return false
}

func dropWorker(ws []*wconn, w *wconn) []*wconn {
	out := ws[:0]
	for _, x := range ws {
		if x != w {
			out = append(out, x)
		}
	}
	return out
}

// whoHas maps keys to the workers holding them (the holder first, then copies).
func (s *scheduler) whoHas(keys []string) *ctlReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for _, k := range keys {
		t := s.tasks[k]
		if t == nil || t.state != StateMemory || t.worker == nil {
			out[k] = nil
			continue
		}
		ws := []string{t.worker.info.Name}
		for _, r := range t.replicas {
			ws = append(ws, r.info.Name)
		}
		out[k] = ws
	}
	return &ctlReply{OK: true, Where: out}
}

// hasWhat maps every worker to the keys it holds.
func (s *scheduler) hasWhat() *ctlReply {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string][]string{}
	for name, w := range s.workers {
		keys := make([]string, 0, len(w.memory))
		for k := range w.memory {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		out[name] = keys
	}
	return &ctlReply{OK: true, Where: out}
}

// rebalance moves results from the workers holding the most bytes to those holding the
// least, until no move would bring two workers closer.
func (s *scheduler) rebalance(ctx context.Context) error {
	s.mu.Lock()
	var ws []*wconn
	load := map[*wconn]int64{}
	for _, w := range s.workers {
		if !w.retiring && w.dataAddr != "" {
			ws = append(ws, w)
			load[w] = heldBytes(w) + int64(len(w.memory))
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].info.Name < ws[j].info.Name })
	moves := map[[2]*wconn][]*task{}
	taken := map[*task]bool{}
	for len(ws) > 1 {
		hi, lo := ws[0], ws[0]
		for _, w := range ws {
			if load[w] > load[hi] {
				hi = w
			}
			if load[w] < load[lo] {
				lo = w
			}
		}
		gap := load[hi] - load[lo]
		// The largest result that narrows the gap (moving t changes it by 2*size).
		var pick *task
		for _, t := range sortedTasks(hi.memory) {
			if taken[t] || t.worker != hi || t.state != StateMemory || hasWorker(t.replicas, lo) || t.size+1 >= gap {
				continue
			}
			if pick == nil || t.size > pick.size {
				pick = t
			}
		}
		if pick == nil {
			break
		}
		taken[pick] = true
		load[hi] -= pick.size + 1
		load[lo] += pick.size + 1
		moves[[2]*wconn{hi, lo}] = append(moves[[2]*wconn{hi, lo}], pick)
	}
	s.mu.Unlock()
	var errs []error
	pairs := make([][2]*wconn, 0, len(moves))
	for p := range moves {
		pairs = append(pairs, p)
	}
	sort.Slice(pairs, func(i, j int) bool {
		if pairs[i][0].info.Name != pairs[j][0].info.Name {
			return pairs[i][0].info.Name < pairs[j][0].info.Name
		}
		return pairs[i][1].info.Name < pairs[j][1].info.Name
	})
	for _, p := range pairs {
		if err := s.copyTo(ctx, p[1], moves[p], false); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// replicate makes sure each key is held by n workers (or every worker, if fewer).
func (s *scheduler) replicate(ctx context.Context, keys []string, n int) error {
	if n < 1 {
		return fmt.Errorf("replicate: n = %d, want at least 1", n)
	}
	s.mu.Lock()
	var ws []*wconn
	for _, w := range s.workers {
		if !w.retiring && w.dataAddr != "" {
			ws = append(ws, w)
		}
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].info.Name < ws[j].info.Name })
	plan := map[*wconn][]*task{}
	load := map[*wconn]int64{}
	for _, w := range ws {
		load[w] = heldBytes(w)
	}
	for _, k := range keys {
		t := s.tasks[k]
		if t == nil || t.state != StateMemory || t.worker == nil {
			s.mu.Unlock()
			return fmt.Errorf("replicate: %s is not in memory", k)
		}
		have := 1 + len(t.replicas)
		for have < n {
			var best *wconn
			for _, w := range ws {
				if w == t.worker || hasWorker(t.replicas, w) || hasTask(plan[w], t) {
					continue
				}
				if best == nil || load[w] < load[best] {
					best = w
				}
			}
			if best == nil {
				break
			}
			plan[best] = append(plan[best], t)
			load[best] += t.size
			have++
		}
	}
	s.mu.Unlock()
	var errs []error
	for _, w := range ws {
		if len(plan[w]) > 0 {
			if err := s.copyTo(ctx, w, plan[w], true); err != nil {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func hasTask(ts []*task, t *task) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}
