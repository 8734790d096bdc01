package cluster

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"os"
	"runtime"
	"sort"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

func init() {
	gob.Register(&plan.Output{})
	gob.Register([]*plan.Output{})
	SetChunkExecutor(executeChunks)
	// A GPU worker sees only its own GPU, as device 0. Errors surface on the first task.
	gpuWarm = func() { _, _ = cuda.Open(0) }
}

// executeChunks is the workers' default ChunkExecutor: spec is a gob-encoded batch of planned
// tasks of one kernel. A GPU worker runs the batch as fused launches on its GPU (device 0: it
// sees only its own); kernels the GPU generator does not express (said in the worker's log),
// and CPU workers, run the tasks on the CPU executor, one goroutine per core. inputs are the
// persisted chunks the tasks read (plan.Block.Ref), in the order chunkTask lists them.
func executeChunks(ctx context.Context, spec []byte, inputs []any, onGPU bool) (any, error) {
	var ts []*plan.Task
	if err := gob.NewDecoder(bytes.NewReader(spec)).Decode(&ts); err != nil {
		return nil, fmt.Errorf("decode chunk tasks: %w", err)
	}
	if len(ts) == 0 {
		return []*plan.Output{}, nil
	}
	var fallback string
	if onGPU {
		err := cuda.Runs(ts[0].Kernel)
		if err == nil {
			d, err := cuda.Open(0)
			if err != nil {
				return nil, fmt.Errorf("open this worker's GPU: %w", err)
			}
			reads, err := fillRefs(ts, inputs, d)
			if err != nil {
				return nil, fmt.Errorf("persisted inputs: %w", err)
			}
			outs, err := cuda.RunPlan(ctx, []*cuda.Device{d}, ts)
			if err != nil {
				return nil, err
			}
			for i, why := range reads {
				if why != "" {
					outs[i].HostRead = why
				}
			}
			return outs, nil
		}
		// Never silently: the worker's log says which kernel ran on the host and why, and so
		// do the outputs, which the client reports in the cell and in Path.
		fallback = err.Error()
		fmt.Fprintf(os.Stderr, "gpunotes worker: warning: host fallback: %d chunk(s) of a kernel of shape %v run on the CPU: %v\n", len(ts), ts[0].Kernel.Shape, err)
	}
	if _, err := fillRefs(ts, inputs, nil); err != nil {
		return nil, fmt.Errorf("persisted inputs: %w", err)
	}
	outs := make([]*plan.Output, len(ts))
	errs := make([]error, len(ts))
	var wg sync.WaitGroup
	next := make(chan int)
	for w := 0; w < min(runtime.GOMAXPROCS(0), len(ts)); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				t0 := time.Now()
				outs[i], errs[i] = cpu.Execute(ctx, ts[i])
				if errs[i] == nil && fallback != "" {
					outs[i].HostFallback, outs[i].HostSeconds = fallback, time.Since(t0).Seconds()
				}
			}
		}()
	}
	for i := range ts {
		next <- i
	}
	close(next)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("chunk %d: %w", ts[i].Index, err)
		}
	}
	return outs, nil
}

// batchesPerWorker cuts a computation into this many batches per worker: few enough that
// per-task overhead vanishes (a GPU runs a batch as one launch), enough to balance load and
// show progress.
const batchesPerWorker = 4

// Run runs planned gpuarray chunk tasks on the cluster's workers; it makes a Client a
// gpuarray.Scheduler, so x.Sum().Compute(gpuarray.On(c)) computes on the cluster. outs[i]
// belongs to tasks[i]; gpuarray combines the partials in its fixed order, so results equal
// local ones. Cancelling ctx cancels the tasks.
func (c *Client) Run(ctx context.Context, tasks []*plan.Task, done func(n int)) ([]*plan.Output, error) {
	ctx = ctxOr(ctx)
	if len(tasks) == 0 {
		return nil, nil
	}
	nb := max(1, len(c.WorkerInfo())) * batchesPerWorker
	nb = min(nb, len(tasks))
	// Tasks reading persisted chunks are batched by the worker holding them, so each batch
	// runs there; the order within a holder's tasks is kept.
	order := make([]int, len(tasks))
	holder := make([]string, len(tasks))
	for i := range tasks {
		order[i] = i
		holder[i] = c.holderOf(tasks[i])
	}
	sort.SliceStable(order, func(a, b int) bool { return holder[order[a]] < holder[order[b]] })
	bounds := make([]int, nb+1)
	for i := range bounds {
		bounds[i] = i * len(tasks) / nb
	}
	// A batch holds tasks of one kernel and one holder: cut where either changes too.
	var cuts []int
	for b := 0; b < nb; b++ {
		cuts = append(cuts, bounds[b])
		for i := bounds[b] + 1; i < bounds[b+1]; i++ {
			p, q := tasks[order[i-1]], tasks[order[i]]
			if p.Kernel != q.Kernel || holder[order[i-1]] != holder[order[i]] {
				cuts = append(cuts, i)
			}
		}
	}
	cuts = append(cuts, len(tasks))
	ts := make([]*task, len(cuts)-1)
	for b := range ts {
		batch := make([]*plan.Task, 0, cuts[b+1]-cuts[b])
		for _, i := range order[cuts[b]:cuts[b+1]] {
			batch = append(batch, tasks[i])
		}
		t, err := c.chunkTask(batch)
		if err != nil {
			return nil, err
		}
		t.key = c.s.newKey("chunks")
		ts[b] = t
	}
	if err := c.s.add(ts); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	keys := make([]string, len(ts))
	for i, t := range ts {
		keys[i] = t.key
	}
	defer func() {
		c.s.cancel(keys)
		for _, k := range keys {
			c.s.release(k)
		}
	}()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	outs := make([]*plan.Output, len(tasks))
	errs := make(chan error, len(ts))
	var wg sync.WaitGroup
	for b, t := range ts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			lo, hi := cuts[b], cuts[b+1]
			first, last := tasks[order[lo]].Index, tasks[order[hi-1]].Index
			v, err := (&Future{c: c, t: t}).Result(ctx)
			if err != nil {
				errs <- fmt.Errorf("chunks %d..%d: %w", first, last, err)
				cancel()
				return
			}
			o, ok := v.([]*plan.Output)
			if !ok || len(o) != hi-lo {
				errs <- fmt.Errorf("chunks %d..%d: worker returned %T", first, last, v)
				cancel()
				return
			}
			for j, i := range order[lo:hi] {
				outs[i] = o[j]
			}
			if done != nil {
				done(hi - lo)
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	return outs, nil
}
