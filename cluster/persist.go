package cluster

import (
	"bytes"
	"context"
	"encoding/gob"
	"fmt"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// A Client is a plan.Keeper: gpuarray's Persist(On(c)) keeps an array's chunks on the workers
// that computed them, and later chunk tasks reading them are sent where they are.
var _ plan.Keeper = (*Client)(nil)

// keptChunk is one persisted chunk: the result of a chunk task that the scheduler keeps (and
// recomputes from its spec when its worker dies) until released.
type keptChunk struct {
	f *Future
}

// kept maps the keys of kept chunks to their tasks, per scheduler, for the tasks that read
// them (their dependencies).
var (
	keptMu sync.Mutex
	kept   = map[keptID]*task{}
)

type keptID struct {
	s   backend
	key string
}

// Keep runs planned chunk tasks, one cluster task per chunk, and keeps each result on the
// worker that computed it until the returned chunks are released (plan.Keeper). It returns
// when every chunk is computed.
func (c *Client) Keep(ctx context.Context, tasks []*plan.Task, done func(n int)) ([]plan.Kept, error) {
	ctx = ctxOr(ctx)
	homes := alignedHomes(ctx, c.s)
	ts := make([]*task, len(tasks))
	for i, pt := range tasks {
		if pt.Kernel.Reduce != nil {
			return nil, fmt.Errorf("cluster: keep: chunk %d is a reduction's partial, not a chunk", pt.Index)
		}
		t, err := c.chunkTask([]*plan.Task{pt})
		if err != nil {
			return nil, err
		}
		t.key = c.s.newKey("persist")
		t.spec.Keep = true
		if len(homes) > 0 && len(t.deps) == 0 {
			t.home = homes[pt.Index%len(homes)]
		}
		ts[i] = t
	}
	if err := c.s.add(ts); err != nil {
		return nil, fmt.Errorf("cluster: %w", err)
	}
	keys := make([]string, len(ts))
	for i, t := range ts {
		keys[i] = t.key
	}
	c.noteKept(keys)
	out := make([]plan.Kept, len(ts))
	keptMu.Lock()
	for i, t := range ts {
		kept[keptID{c.s, t.key}] = t
		out[i] = &keptChunk{f: c.newFuture(t, nil)}
	}
	keptMu.Unlock()
	fail := func(err error) ([]plan.Kept, error) {
		for _, k := range out {
			k.Release()
		}
		return nil, err
	}
	for i, k := range out {
		if err := k.(*keptChunk).f.wait(ctx); err != nil {
			return fail(fmt.Errorf("cluster: chunk %d at %v: %w", tasks[i].Index, tasks[i].Offset, err))
		}
		if done != nil {
			done(1)
		}
	}
	return out, nil
}

// alignedHomes returns the workers' names, sorted, when ctx asks for aligned chunks
// (plan.WithAlignedChunks): chunk i of every array kept then goes to worker i mod n, whatever
// the workers' load, so that a frame's columns of one partition are held together.
func alignedHomes(ctx context.Context, s backend) []string {
	if !plan.AlignedChunksIn(ctx) {
		return nil
	}
	var names []string
	for _, w := range s.workerInfo() {
		names = append(names, w.Name)
	}
	return sortedStrings(names)
}

// Holds reports whether k is a chunk kept by this client's cluster, which its tasks can read
// where it is.
func (c *Client) Holds(k plan.Kept) bool {
	kc, ok := k.(*keptChunk)
	return ok && kc.f.c.s == c.s
}

// Ref is the chunk's task key.
func (k *keptChunk) Ref() string { return k.f.Key() }

// Where names the worker holding the chunk, or the task's state while it has none (being
// computed again after its worker died).
func (k *keptChunk) Where() string {
	mu := k.f.c.s.locker()
	mu.Lock()
	defer mu.Unlock()
	if w := k.f.t.worker; w != nil && k.f.t.state == StateMemory {
		return w.info.Name
	}
	if k.f.t.state == StateMemory {
		return "a worker"
	}
	return k.f.t.state
}

// Fetch returns the chunk's values, waiting while it is recomputed.
func (k *keptChunk) Fetch(ctx context.Context) (dtype.Slice, error) {
	v, err := (&Future{c: k.f.c, t: k.f.t}).Result(ctx)
	if err != nil {
		return dtype.Slice{}, err
	}
	outs, ok := v.([]*plan.Output)
	if !ok || len(outs) != 1 {
		return dtype.Slice{}, fmt.Errorf("persisted chunk %s holds a %T, not one chunk", k.Ref(), v)
	}
	return outs[0].Data, nil
}

// Tier says where its worker keeps the chunk: "device" (a GPU worker's memory), "host" or
// "disk" (spilled); "" while it has none, or before the worker said.
func (k *keptChunk) Tier() string {
	mu := k.f.c.s.locker()
	mu.Lock()
	defer mu.Unlock()
	if k.f.t.state != StateMemory {
		return ""
	}
	return k.f.t.tier
}

// HostFallback says why the GPU worker that computed the chunk ran it on its CPU ("" when it
// did not, or the chunk is being computed again).
func (k *keptChunk) HostFallback() string {
	mu := k.f.c.s.locker()
	mu.Lock()
	defer mu.Unlock()
	return k.f.t.fallback
}

// Release drops the chunk from its worker.
func (k *keptChunk) Release() {
	keptMu.Lock()
	delete(kept, keptID{k.f.c.s, k.f.Key()})
	keptMu.Unlock()
	k.f.Release()
}

// chunkTask makes the cluster task that runs a batch of planned tasks of one kernel. Blocks
// that read kept chunks (plan.Block.Ref) become its dependencies, listed in Inputs in the
// order they first appear in the batch, which is how the worker matches them (fillRefs).
func (c *Client) chunkTask(batch []*plan.Task) (*task, error) {
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(batch); err != nil {
		return nil, fmt.Errorf("cluster: encode chunk tasks: %w", err)
	}
	t := &task{spec: taskSpec{Kind: "chunk", Chunk: buf.Bytes()}, maxRetries: c.retries, refs: 1, priority: c.priority}
	seen := map[string]bool{}
	for _, pt := range batch {
		for _, b := range pt.Inputs {
			for _, ref := range b.Refs() {
				if seen[ref] {
					continue
				}
				seen[ref] = true
				keptMu.Lock()
				d := kept[keptID{c.s, ref}]
				keptMu.Unlock()
				if d == nil {
					return nil, fmt.Errorf("cluster: chunk %d reads persisted chunk %s, which this cluster does not hold (released?)", pt.Index, ref)
				}
				t.deps = append(t.deps, d)
				t.spec.Inputs = append(t.spec.Inputs, ref)
			}
		}
	}
	return t, nil
}

// holderOf returns the name of the worker holding the first kept chunk that t reads ("" when
// it reads none, or it is not known).
func (c *Client) holderOf(t *plan.Task) string {
	for _, b := range t.Inputs {
		refs := b.Refs()
		if len(refs) == 0 {
			continue
		}
		keptMu.Lock()
		d := kept[keptID{c.s, refs[0]}]
		keptMu.Unlock()
		if d == nil {
			return ""
		}
		mu := c.s.locker()
		mu.Lock()
		defer mu.Unlock()
		if d.worker != nil {
			return d.worker.info.Name
		}
		return ""
	}
	return ""
}

// fillRefs gives the blocks of ts that read kept chunks their values: inputs[i] is the
// result of the i-th distinct Ref in order of appearance (see chunkTask). A chunk held in the
// memory of d (the GPU that runs ts; nil: the CPU) is read there in place (plan.Held); a block
// joined from several kept chunks (plan.Block.RefJoin) is joined there when d holds them all
// (a Held join), else in host memory (plan.JoinValues); other device-held chunks are copied to
// the host.
//
// On a GPU (d set) it returns, per task, why the task reads chunks held on d from host memory
// after all ("" for none): what the client names in Path (plan.Output.HostRead).
func fillRefs(ts []*plan.Task, inputs []any, d *cuda.Device) (hostReads []string, err error) {
	hostReads = make([]string, len(ts))
	note := func(ti int, why string) {
		if d != nil && hostReads[ti] == "" {
			hostReads[ti] = why
		}
	}
	at := map[string]int{}
	input := func(t *plan.Task, ref string) (any, error) {
		i, ok := at[ref]
		if !ok {
			i = len(at)
			at[ref] = i
		}
		if i >= len(inputs) {
			return nil, fmt.Errorf("chunk %d reads %s: %d inputs given", t.Index, ref, len(inputs))
		}
		return inputs[i], nil
	}
	for ti, t := range ts {
		for j := range t.Inputs {
			b := &t.Inputs[j]
			if b.RefJoin != nil {
				why, err := fillJoin(t, j, input, d)
				if err != nil {
					return nil, err
				}
				note(ti, why)
				continue
			}
			if b.Ref == "" {
				continue
			}
			in, err := input(t, b.Ref)
			if err != nil {
				return nil, err
			}
			if c, ok := in.(*devChunk); ok {
				if expr.Size(c.shape) != expr.Size(b.Shape) {
					return nil, fmt.Errorf("chunk %d reads %s: %d values for a block of %d", t.Index, b.Ref, expr.Size(c.shape), expr.Size(b.Shape))
				}
				if heldBlock(t, j, c, d) {
					b.Held, b.Data, b.Ref = &plan.Held{Device: d.Info.Index, Ptr: uintptr(c.ptr), Narrow: c.narrow}, dtype.Slice{}, ""
					continue
				}
				note(ti, whyHost(t, j, c, d))
			}
			v, err := keptValues(in)
			if err != nil {
				return nil, fmt.Errorf("chunk %d reads %s: %w", t.Index, b.Ref, err)
			}
			if int64(v.Len()) != expr.Size(b.Shape) {
				return nil, fmt.Errorf("chunk %d reads %s: %d values for a block of %d", t.Index, b.Ref, v.Len(), expr.Size(b.Shape))
			}
			b.Data, b.Ref = v, ""
		}
	}
	if len(at) != len(inputs) {
		return nil, fmt.Errorf("%d persisted chunks read, %d inputs given", len(at), len(inputs))
	}
	return hostReads, nil
}

// keptValues returns the host values of a kept chunk given to a task: one chunk task's output,
// or a chunk held on this worker's GPU, copied to the host.
func keptValues(in any) (dtype.Slice, error) {
	if c, ok := in.(*devChunk); ok {
		v, err := c.Host()
		if err != nil {
			return dtype.Slice{}, err
		}
		in = v
	}
	outs, ok := in.([]*plan.Output)
	if !ok || len(outs) != 1 {
		return dtype.Slice{}, fmt.Errorf("a %T, not one chunk", in)
	}
	return outs[0].Data, nil
}

// fillJoin gives block j of t, joined from kept chunks (plan.Block.RefJoin), its values: on d
// where d holds every piece in the format t's kernel reads (a Held join, the pieces copied
// into one buffer there), else joined in host memory. It returns why pieces that d holds were
// read from host memory, or "".
func fillJoin(t *plan.Task, j int, input func(*plan.Task, string) (any, error), d *cuda.Device) (string, error) {
	b := &t.Inputs[j]
	ins := make([]any, len(b.RefJoin.Pieces))
	onDevice := d != nil
	narrow := false
	why, held := "", false // why not on d; whether d holds some piece
	for k, p := range b.RefJoin.Pieces {
		in, err := input(t, p.Ref)
		if err != nil {
			return "", err
		}
		ins[k] = in
		c, ok := in.(*devChunk)
		switch {
		case !ok:
			why = "a block joins chunks kept on other workers, which come through host memory"
		case expr.Size(c.shape) != expr.Size(p.Shape):
			return "", fmt.Errorf("chunk %d reads %s: %d values for a chunk of %d", t.Index, p.Ref, expr.Size(c.shape), expr.Size(p.Shape))
		case !heldBlock(t, j, c, d):
			why = whyHost(t, j, c, d)
		case k > 0 && c.narrow != narrow:
			why = "a block joins chunks kept in different formats (internal)"
		}
		if ok && c.d == d {
			held = true
		}
		if why != "" {
			onDevice = false
			continue
		}
		narrow = c.narrow
	}
	if onDevice {
		join := &plan.HeldJoin{Pieces: make([]plan.HeldPiece, len(ins))}
		for k, p := range b.RefJoin.Pieces {
			join.Pieces[k] = plan.HeldPiece{Ptr: uintptr(ins[k].(*devChunk).ptr), Origin: p.Origin, Shape: p.Shape}
		}
		b.Held = &plan.Held{Device: d.Info.Index, Ptr: join.Pieces[0].Ptr, Narrow: narrow, Join: join}
		b.Data, b.RefJoin = dtype.Slice{}, nil
		return "", nil
	}
	vals := make([]dtype.Slice, len(ins))
	for k, in := range ins {
		v, err := keptValues(in)
		if err != nil {
			return "", fmt.Errorf("chunk %d reads %s: %w", t.Index, b.RefJoin.Pieces[k].Ref, err)
		}
		vals[k] = v
	}
	v, err := plan.JoinValues(b, vals)
	if err != nil {
		return "", fmt.Errorf("chunk %d: %w", t.Index, err)
	}
	b.Data, b.RefJoin = v, nil
	if !held {
		why = "" // nothing this GPU holds went through host memory
	}
	return why, nil
}

// whyHost says why task t reads chunk c, which GPU d holds, as block slot from host memory
// (heldBlock refused it).
func whyHost(t *plan.Task, slot int, c *devChunk, d *cuda.Device) string {
	k := t.Kernel
	switch {
	case c.d != d:
		return "a chunk is kept on another GPU of the worker"
	case k.Call != nil && !cuda.ReadsHeld(k):
		return fmt.Sprintf("the %v reads %v values from host memory", k.Call.Fn, k.Instrs[k.Result].DType)
	}
	for _, in := range k.Instrs {
		if in.Code == plan.Input && in.Slot == slot && in.DType != c.dt || in.Code == plan.Search && in.Slot == slot && in.Sorted != c.dt {
			return fmt.Sprintf("a chunk kept as %v is read as %v", c.dt, in.DType)
		}
	}
	return "a chunk is not read in place (internal)"
}
