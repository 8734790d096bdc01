package cluster

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// activeNannies are the nannies of workers that are not retired; the caller holds c.mu.
func (c *LocalCUDA) activeLocked() []*nanny {
	var out []*nanny
	for _, n := range c.nannies {
		n.mu.Lock()
		stopping := n.stopping
		n.mu.Unlock()
		if !stopping {
			out = append(out, n)
		}
	}
	return out
}

// specFor returns the spec of a worker to add: a CPU worker "cpuN" with the first unused N,
// or the first GPU slot (GPU, MIG instance or slice of WorkersPerGPU) without a worker.
func (c *LocalCUDA) specForLocked(used map[string]bool) (workerSpec, error) {
	if len(c.specs) > 0 && c.specs[0].slot != nil {
		o := c.opts
		o.NWorkers = 0
		env, set := envCUDA()
		all, err := planWorkers(o, c.gpus, c.gpuErr, env, set, hostMemory())
		if err != nil {
			return workerSpec{}, err
		}
		for _, sp := range all {
			if !used[sp.name] {
				return sp, nil
			}
		}
		return workerSpec{}, fmt.Errorf("every GPU slot has a worker (%d: GPUs × MIG instances × WorkersPerGPU %d); "+
			"to scale to more, start the cluster with a larger WorkersPerGPU (slices of each GPU)", len(all), max(c.opts.WorkersPerGPU, 1))
	}
	base := workerSpec{threads: 1}
	if len(c.specs) > 0 {
		base = c.specs[0]
	}
	for i := 0; ; i++ {
		name := fmt.Sprintf("cpu%d", i)
		if !used[name] {
			base.name = name
			base.slot = nil
			return base, nil
		}
	}
}

// Scale starts or retires workers until n run, as dask's cluster.scale: new workers take the
// next CPU names, or the free GPU slots (GPUs, MIG instances, or the slices of WorkersPerGPU);
// retired ones hand their kept results to the others first. It returns once the new
// processes are started; WaitForWorkers waits for them to join.
func (c *LocalCUDA) Scale(n int) error {
	if n < 0 {
		return fmt.Errorf("cluster: Scale(%d): want at least 0 workers", n)
	}
	c.scaleMu.Lock()
	defer c.scaleMu.Unlock()
	return c.scaleLocked(n)
}

func (c *LocalCUDA) scaleLocked(n int) error {
	c.closeMu.Lock()
	closed := c.closed
	c.closeMu.Unlock()
	if closed {
		return errors.New("cluster: Scale: the cluster is closed")
	}
	c.mu.Lock()
	active := c.activeLocked()
	if n > len(active) {
		used := map[string]bool{}
		for _, a := range active {
			used[a.spec.name] = true
		}
		var started []*nanny
		for len(active)+len(started) < n {
			sp, err := c.specForLocked(used)
			if err != nil {
				c.mu.Unlock()
				return fmt.Errorf("cluster: Scale(%d): %w", n, err)
			}
			used[sp.name] = true
			nn := &nanny{addr: c.sched.address(), token: c.token, opts: c.opts, note: c.sched.noteRestart,
				spec: sp, bin: c.bin, failed: make(chan error, 1)}
			c.nannies = append(c.nannies, nn)
			started = append(started, nn)
		}
		c.mu.Unlock()
		for _, nn := range started {
			go nn.run()
		}
		return nil
	}
	if n == len(active) {
		c.mu.Unlock()
		return nil
	}
	// Retire the workers holding the fewest bytes, newest names first among equals.
	info := map[string]WorkerInfo{}
	for _, w := range c.sched.workerInfo() {
		info[w.Name] = w
	}
	sort.SliceStable(active, func(i, j int) bool {
		a, b := info[active[i].spec.name], info[active[j].spec.name]
		if a.Stored+a.DeviceStored+a.Spilled != b.Stored+b.DeviceStored+b.Spilled {
			return a.Stored+a.DeviceStored+a.Spilled < b.Stored+b.DeviceStored+b.Spilled
		}
		return active[i].spec.name > active[j].spec.name
	})
	var names []string
	for _, a := range active[:len(active)-n] {
		names = append(names, a.spec.name)
	}
	c.mu.Unlock()
	return c.retire(cellContext(), names)
}

// WaitForWorkers waits until at least n workers have joined, at most timeout (0: the running
// cell's context bounds it). A worker that cannot start is an error at once.
func (c *LocalCUDA) WaitForWorkers(n int, timeout time.Duration) error {
	ctx := cellContext()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	for {
		c.mu.Lock()
		var failures []string
		for _, nn := range c.activeLocked() {
			nn.mu.Lock()
			if nn.failErr != nil {
				failures = append(failures, nn.failErr.Error())
			}
			nn.mu.Unlock()
		}
		c.mu.Unlock()
		if len(failures) > 0 {
			return fmt.Errorf("cluster: WaitForWorkers(%d): %s", n, strings.Join(failures, "; "))
		}
		s := c.sched
		s.mu.Lock()
		have, ch := len(s.workers), s.changed
		s.mu.Unlock()
		if have >= n {
			return nil
		}
		select {
		case <-ch:
		case <-time.After(time.Second):
		case <-ctx.Done():
			return fmt.Errorf("cluster: WaitForWorkers(%d): %d joined: %w", n, have, ctx.Err())
		}
	}
}

// RetireWorkers moves the results the named workers hold to the others, then stops them for
// good (their nannies do not restart them).
func (c *LocalCUDA) RetireWorkers(names ...string) error {
	c.scaleMu.Lock()
	defer c.scaleMu.Unlock()
	return c.retire(cellContext(), names)
}

func (c *LocalCUDA) retire(ctx context.Context, names []string) error {
	byName := map[string]*nanny{}
	c.mu.Lock()
	for _, nn := range c.activeLocked() {
		byName[nn.spec.name] = nn
	}
	c.mu.Unlock()
	for _, name := range names {
		if byName[name] == nil {
			return fmt.Errorf("cluster: RetireWorkers: no worker %q started by this cluster", name)
		}
	}
	err := c.sched.retireThen(ctx, names, true, func(name string) { byName[name].stop() })
	if err != nil {
		return fmt.Errorf("cluster: RetireWorkers: %w", err)
	}
	var errs []error
	for _, name := range names {
		nn := byName[name]
		select {
		case <-nn.exited():
		case <-time.After(10 * time.Second):
			nn.kill()
			<-nn.exited()
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("retire %s: %w", name, ctx.Err()))
			continue
		}
		c.mu.Lock()
		for i, x := range c.nannies {
			if x == nn {
				c.nannies = append(c.nannies[:i], c.nannies[i+1:]...)
				break
			}
		}
		c.mu.Unlock()
	}
	if len(errs) > 0 {
		return fmt.Errorf("cluster: RetireWorkers: %w", errors.Join(errs...))
	}
	return nil
}

// Restart starts every worker process afresh (new PIDs), as dask's client.restart, and
// waits until they have joined again. Persisted array chunks they held are computed again
// from their graph (an input released meanwhile errs saying so); the futures of submitted
// functions they ran or held err (Result says the worker was restarted), as their side
// effects must not repeat.
func (c *LocalCUDA) Restart() error {
	c.mu.Lock()
	var names []string
	for _, nn := range c.activeLocked() {
		names = append(names, nn.spec.name)
	}
	c.mu.Unlock()
	return c.RestartWorkers(names...)
}

// RestartWorkers starts the named workers afresh (new PIDs) and waits until they joined again.
func (c *LocalCUDA) RestartWorkers(names ...string) error {
	c.scaleMu.Lock()
	defer c.scaleMu.Unlock()
	byName := map[string]*nanny{}
	c.mu.Lock()
	for _, nn := range c.activeLocked() {
		byName[nn.spec.name] = nn
	}
	c.mu.Unlock()
	old := map[string]int{}
	for _, name := range names {
		nn := byName[name]
		if nn == nil {
			return fmt.Errorf("cluster: RestartWorkers: no worker %q started by this cluster", name)
		}
	}
	c.sched.markRestarting(names)
	for _, name := range names {
		nn := byName[name]
		nn.mu.Lock()
		old[name] = nn.pid
		nn.expected = true
		nn.mu.Unlock()
		nn.kill()
	}
	ctx := cellContext()
	timeout := c.opts.StartTimeout
	if timeout <= 0 {
		timeout = 60 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		s := c.sched
		s.mu.Lock()
		waiting := 0
		for _, name := range names {
			w := s.workers[name]
			if w == nil || w.info.PID == old[name] {
				waiting++
			}
		}
		ch := s.changed
		s.mu.Unlock()
		if waiting == 0 {
			return nil
		}
		for _, name := range names {
			nn := byName[name]
			nn.mu.Lock()
			ferr := nn.failErr
			nn.mu.Unlock()
			if ferr != nil {
				return fmt.Errorf("cluster: RestartWorkers: %w", ferr)
			}
		}
		select {
		case <-ch:
		case <-time.After(time.Second):
		case <-ctx.Done():
			return fmt.Errorf("cluster: RestartWorkers: %d of %d workers did not come back: %w", waiting, len(names), ctx.Err())
		}
	}
}

// Adapt keeps between min and max workers: it adds workers while tasks wait for a free thread
// and retires a worker that has been idle a few seconds (moving its kept results off first),
// as dask's cluster.adapt. Adapt again changes the bounds; StopAdapt stops adapting.
func (c *LocalCUDA) Adapt(lo, hi int) error {
	if lo < 0 || hi < 1 || lo > hi {
		return fmt.Errorf("cluster: Adapt(%d, %d): want 0 <= min <= max and max >= 1", lo, hi)
	}
	c.StopAdapt()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	c.mu.Lock()
	c.adaptStop, c.adaptDone = cancel, done
	c.mu.Unlock()
	go func() {
		defer close(done)
		c.adapt(ctx, lo, hi)
	}()
	return nil
}

// StopAdapt stops adapting; the workers stay as they are.
func (c *LocalCUDA) StopAdapt() {
	c.mu.Lock()
	stop, done := c.adaptStop, c.adaptDone
	c.adaptStop, c.adaptDone = nil, nil
	c.mu.Unlock()
	if stop != nil {
		stop()
		<-done
	}
}

// adaptIdleTicks is how many adapt ticks (half a second each) a worker stays idle before it
// is retired.
const adaptIdleTicks = 6

func (c *LocalCUDA) adapt(ctx context.Context, lo, hi int) {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	idle := map[string]int{}
	for {
		c.adaptOnce(ctx, lo, hi, idle)
		select {
		case <-ctx.Done():
			return
		case <-c.stopCh:
			return
		case <-tick.C:
		}
	}
}

func (c *LocalCUDA) adaptOnce(ctx context.Context, lo, hi int, idle map[string]int) {
	c.mu.Lock()
	active := c.activeLocked()
	c.mu.Unlock()
	s := c.sched
	s.mu.Lock()
	waiting := len(s.ready)
	joined := 0
	threads := 1
	var idleNames []string
	for _, nn := range active {
		w := s.workers[nn.spec.name]
		if w == nil {
			continue
		}
		joined++
		threads = w.info.NThreads
		if extra := len(w.processing) - w.info.NThreads; extra > 0 {
			waiting += extra
		}
		if len(w.processing) == 0 {
			idle[w.info.Name]++
			if idle[w.info.Name] >= adaptIdleTicks {
				idleNames = append(idleNames, w.info.Name)
			}
		} else {
			idle[w.info.Name] = 0
		}
	}
	s.mu.Unlock()
	if threads < 1 {
		threads = 1
	}
	want := len(active)
	switch {
	case len(active) < lo:
		want = lo
	case len(active) > hi:
		want = hi
	case waiting > 0 && joined == len(active):
		// Only once the workers started last have joined: no second wave for the same wait.
		want = min(hi, len(active)+(waiting+threads-1)/threads)
	case waiting == 0 && len(idleNames) > 0 && len(active) > lo:
		sort.Sort(sort.Reverse(sort.StringSlice(idleNames)))
		c.scaleMu.Lock()
		err := c.retire(ctx, idleNames[:1])
		c.scaleMu.Unlock()
		if err != nil {
			c.sched.logf("adapt: %v", err)
		}
		delete(idle, idleNames[0])
		return
	}
	if want != len(active) {
		c.scaleMu.Lock()
		err := c.scaleLocked(want)
		c.scaleMu.Unlock()
		if err != nil {
			c.sched.logf("adapt: %v", err)
		}
	}
}

// markRestarting flags the named workers' connections: when they drop, the submitted calls
// they ran or held err instead of running again (their side effects would repeat), while
// array chunks and scattered values are computed or placed again.
func (s *scheduler) markRestarting(names []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, n := range names {
		if w := s.workers[n]; w != nil {
			w.restarting = true
		}
	}
}

// dropRestartedLocked errs a submitted call whose worker was restarted on request.
func (s *scheduler) dropRestartedLocked(t *task, w *wconn) {
	t.state = StateErred
	t.err = &TaskError{Key: t.key, Worker: w.info.Name, Message: "its worker was restarted (Restart): the result " +
		"of a submitted function is not computed again; submit it again"}
	s.erred++
	s.failDependents(t)
	t.notify()
	s.finishLocked(t)
	s.finishedFAF(t)
}
