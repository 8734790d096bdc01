package cluster

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

func init() {
	gob.Register(&plan.Output{})
	SetChunkExecutor(executeChunk)
}

// executeChunk is the workers' default ChunkExecutor: it decodes a planned task and runs it
// with the CPU executor. (GPU workers run chunks on the CPU too until gpuarray/cuda exports a
// per-task executor.)
func executeChunk(ctx context.Context, spec []byte, _ []any, _ bool) (any, error) {
	var t plan.Task
	if err := gob.NewDecoder(bytes.NewReader(spec)).Decode(&t); err != nil {
		return nil, fmt.Errorf("decode chunk task: %w", err)
	}
	out, err := cpu.Execute(ctx, &t)
	if err != nil {
		return nil, fmt.Errorf("chunk %d: %w", t.Index, err)
	}
	return out, nil
}

// Run runs planned gpuarray chunk tasks on the cluster's workers; it makes a Client a
// gpuarray.Scheduler, so x.Sum().Compute(gpuarray.On(c)) computes on the cluster. outs[i]
// belongs to tasks[i]; gpuarray combines the partials in its fixed order, so results equal
// local ones. Cancelling ctx cancels the tasks.
func (c *Client) Run(ctx context.Context, tasks []*plan.Task, done func(n int)) ([]*plan.Output, error) {
	ctx = ctxOr(ctx)
	ts := make([]*task, len(tasks))
	for i, pt := range tasks {
		var buf bytes.Buffer
		if err := gob.NewEncoder(&buf).Encode(pt); err != nil {
			return nil, fmt.Errorf("cluster: encode chunk task %d: %w", i, err)
		}
		ts[i] = &task{key: c.s.newKey("chunk"), spec: taskSpec{Kind: "chunk", Chunk: buf.Bytes()}, maxRetries: c.retries, refs: 1}
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
	outs := make([]*plan.Output, len(ts))
	errs := make(chan error, len(ts))
	sem := make(chan struct{}, 32)
	var wg sync.WaitGroup
	for i, t := range ts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			f := &Future{c: c, t: t}
			v, err := f.Result(ctx)
			if err != nil {
				errs <- fmt.Errorf("chunk %d: %w", tasks[i].Index, err)
				cancel()
				return
			}
			o, ok := v.(*plan.Output)
			if !ok {
				errs <- fmt.Errorf("chunk %d: worker returned %T", tasks[i].Index, v)
				cancel()
				return
			}
			outs[i] = o
			if done != nil {
				done(1)
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
