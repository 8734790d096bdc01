package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// JoinColumns joins two sides of 1-D arrays persisted on this cluster (the columns of two
// frames, each chunk a partition) on their key columns, on the workers: p's strategy says
// how the sides meet. Shuffle hash-partitions both sides into p.N partitions worker to worker
// (ShuffleColumns); BroadcastRight (BroadcastLeft) joins every partition of one side with the
// whole other side; Aligned joins partition i with partition i. A join task per output
// partition runs where its pieces are and keeps the row pairs there (dataframe/hashjoin,
// built on the smaller side), then a gather task per output column keeps that column of the
// partition: the result stays on the workers. It returns each output column's values and
// validity (nil where p.Out's column has no nulls), or nil slices when the join has no rows.
//
// Skewed keys: a shuffled partition of the side whose rows come out once (left for inner,
// left, semi and anti joins, right for right joins; never for outer joins) larger than
// 1/skewFraction of the smallest worker memory limit (a heavy key's) is split into pieces
// under it, each joined with the other side's partition, so no join task holds it whole.
//
// Within an output partition the rows come as hashjoin.Join orders them. A worker lost
// mid-join makes the run start again on the workers there are, as ShuffleColumns does. It is
// plumbing for package dataframe (Merge on a cluster).
func (c *Client) JoinColumns(ctx context.Context, left, right []*gpuarray.Array, p hashjoin.Plan) (vals, valid []*gpuarray.Array, err error) {
	ctx = ctxOr(ctx)
	if err := checkJoinPlan(left, right, p); err != nil {
		return nil, nil, fmt.Errorf("cluster: join: %w", err)
	}
	err = c.rerunLost(ctx, "join", func(ws []WorkerInfo) (err error) {
		vals, valid, err = c.joinRun(ctx, ws, left, right, p)
		return err
	})
	return vals, valid, err
}

func checkJoinPlan(left, right []*gpuarray.Array, p hashjoin.Plan) error {
	if len(left) == 0 || len(right) == 0 {
		return fmt.Errorf("%d left and %d right columns", len(left), len(right))
	}
	if len(p.Left.Keys) == 0 || len(p.Left.Keys) != len(p.Right.Keys) || len(p.Left.Valid) != len(p.Left.Keys) || len(p.Right.Valid) != len(p.Right.Keys) {
		return fmt.Errorf("%d left keys (%d validity columns), %d right keys (%d)", len(p.Left.Keys), len(p.Left.Valid), len(p.Right.Keys), len(p.Right.Valid))
	}
	in := func(cols []*gpuarray.Array, j int, none bool) bool {
		return (none && j == -1) || (j >= 0 && j < len(cols))
	}
	for i := range p.Left.Keys {
		if !in(left, p.Left.Keys[i], false) || !in(left, p.Left.Valid[i], true) || !in(right, p.Right.Keys[i], false) || !in(right, p.Right.Valid[i], true) {
			return fmt.Errorf("key %d names no column", i)
		}
	}
	sides := [2][]*gpuarray.Array{left, right}
	for k, o := range p.Out {
		if o.Side != 0 && o.Side != 1 || !in(sides[o.Side], o.Col, false) || !in(sides[o.Side], o.Valid, true) ||
			!in(sides[1-o.Side], o.Fill, true) || !in(sides[1-o.Side], o.FillValid, true) {
			return fmt.Errorf("output column %d names no column", k)
		}
		if o.Fill >= 0 && sides[1-o.Side][o.Fill].DType() != sides[o.Side][o.Col].DType() {
			return fmt.Errorf("output column %d is %v, its fill %v", k, sides[o.Side][o.Col].DType(), sides[1-o.Side][o.Fill].DType())
		}
	}
	switch p.Strategy {
	case hashjoin.Shuffle:
		if p.N < 1 {
			return fmt.Errorf("a shuffle into %d partitions", p.N)
		}
	case hashjoin.BroadcastRight:
		if p.How == hashjoin.Right || p.How == hashjoin.Outer {
			return fmt.Errorf("a %s join cannot broadcast its right side", p.How)
		}
	case hashjoin.BroadcastLeft:
		if p.How != hashjoin.Inner && p.How != hashjoin.Right {
			return fmt.Errorf("a %s join cannot broadcast its left side", p.How)
		}
	case hashjoin.Aligned:
		if len(left[0].Chunks()[0]) != len(right[0].Chunks()[0]) {
			return fmt.Errorf("aligned sides of %d and %d partitions", len(left[0].Chunks()[0]), len(right[0].Chunks()[0]))
		}
	default:
		return fmt.Errorf("unknown strategy %d", p.Strategy)
	}
	return nil
}

// joinGroup is one output partition's pieces: chunk indexes of each side.
type joinGroup struct{ l, r []int }

// mayLack reports whether side's rows may be missing from a join's output rows (nulls).
func mayLack(how hashjoin.How, side int) bool {
	if side == 0 {
		return how == hashjoin.Right || how == hashjoin.Outer
	}
	return how == hashjoin.Left || how == hashjoin.Outer || how == hashjoin.Anti
}

func upTo(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i
	}
	return out
}

// joinGroups pairs the sides' chunks into output partitions. lparts and rparts are the
// partition numbers of a shuffle's chunks.
func joinGroups(p hashjoin.Plan, nl, nr int, lparts, rparts []int) []joinGroup {
	var gs []joinGroup
	switch p.Strategy {
	case hashjoin.BroadcastRight:
		for i := 0; i < nl; i++ {
			gs = append(gs, joinGroup{[]int{i}, upTo(nr)})
		}
	case hashjoin.BroadcastLeft:
		for i := 0; i < nr; i++ {
			gs = append(gs, joinGroup{upTo(nl), []int{i}})
		}
	case hashjoin.Aligned:
		for i := 0; i < nl; i++ {
			gs = append(gs, joinGroup{[]int{i}, []int{i}})
		}
	case hashjoin.Shuffle:
		at := map[int][2]int{}
		for i, q := range lparts {
			at[q] = [2]int{i, -1}
		}
		for i, q := range rparts {
			e, ok := at[q]
			if !ok {
				e[0] = -1
			}
			e[1] = i
			at[q] = e
		}
		qs := make([]int, 0, len(at))
		for q := range at {
			qs = append(qs, q)
		}
		slices.Sort(qs)
		for _, q := range qs {
			var g joinGroup
			if i := at[q][0]; i >= 0 {
				g.l = []int{i}
			}
			if i := at[q][1]; i >= 0 {
				g.r = []int{i}
			}
			hasL, hasR := g.l != nil, g.r != nil
			switch p.How {
			case hashjoin.Inner, hashjoin.Semi:
				if !hasL || !hasR {
					continue
				}
			case hashjoin.Left, hashjoin.Anti:
				if !hasL {
					continue
				}
			case hashjoin.Right:
				if !hasR {
					continue
				}
			}
			gs = append(gs, g)
		}
	}
	return gs
}

// keptTask returns the task that keeps the chunk ref on this cluster.
func (c *Client) keptTask(ref string) (*task, error) {
	keptMu.Lock()
	defer keptMu.Unlock()
	d := kept[keptID{c.s, ref}]
	if d == nil {
		return nil, fmt.Errorf("chunk %s is not held by this cluster (released?)", ref)
	}
	return d, nil
}

// joinRun is one run of a join on the workers there are now.
func (c *Client) joinRun(ctx context.Context, ws []WorkerInfo, left, right []*gpuarray.Array, p hashjoin.Plan) ([]*gpuarray.Array, []*gpuarray.Array, error) {
	if len(ws) == 0 {
		return nil, nil, errors.New("no workers")
	}
	sides := [2][]*gpuarray.Array{left, right}
	var lparts, rparts []int
	var moved []*gpuarray.Array // the shuffled sides, released once joined
	defer func() {
		for _, a := range moved {
			a.Release()
		}
	}()
	if p.Strategy == hashjoin.Shuffle {
		l, lp, err := c.ShuffleColumns(ctx, left, p.Left.Keys, p.Left.Valid, p.N)
		if err != nil {
			return nil, nil, c.lostOr(ws, fmt.Errorf("left side: %w", err))
		}
		moved = append(moved, l...)
		r, rp, err := c.ShuffleColumns(ctx, right, p.Right.Keys, p.Right.Valid, p.N)
		if err != nil {
			return nil, nil, c.lostOr(ws, fmt.Errorf("right side: %w", err))
		}
		moved = append(moved, r...)
		sides, lparts, rparts = [2][]*gpuarray.Array{l, r}, lp, rp
	}
	var split skewSplit
	if p.Strategy == hashjoin.Shuffle {
		var err error
		if split, err = c.splitSkewed(ctx, ws, &sides, p.How); err != nil {
			return nil, nil, c.lostOr(ws, fmt.Errorf("split of skewed partitions: %w", err))
		}
		moved = append(moved, split.arrays...)
	}
	var chunks [2][][]plan.Kept
	for s, cols := range sides {
		for j, a := range cols {
			k := gpuarray.KeptChunks(a, c)
			if k == nil {
				return nil, nil, fmt.Errorf("column %d of side %d is not persisted on this cluster", j, s)
			}
			chunks[s] = append(chunks[s], k)
		}
	}
	// The shuffle's groups over its chunks, those of split partitions one per piece.
	groups := split.groups(joinGroups(p, len(chunks[0][0]), len(chunks[1][0]), lparts, rparts))
	run := c.s.newKey("join")
	var tasks []*task // every task of the run, released at the end
	var keep []*task  // the kept output columns, handed over on success
	done := false
	defer func() {
		var keys []string
		for _, t := range tasks {
			keys = append(keys, t.key)
		}
		if !done {
			c.s.cancel(keys)
			for _, t := range keep {
				c.s.release(t.key)
			}
		}
		for _, t := range tasks {
			c.s.release(t.key)
		}
	}()
	// addInputs makes t read the chunks at of side s's columns cols (a column of -1 adds none).
	addInputs := func(t *task, s int, cols []int, at []int) error {
		for _, j := range cols {
			if j < 0 {
				continue
			}
			for _, i := range at {
				ref := chunks[s][j][i].Ref()
				d, err := c.keptTask(ref)
				if err != nil {
					return err
				}
				if !slices.Contains(t.deps, d) {
					t.deps = append(t.deps, d)
				}
				t.spec.Inputs = append(t.spec.Inputs, ref)
			}
		}
		return nil
	}
	// The key columns of each side, in the order the pairs tasks read them.
	used := func(sd hashjoin.Side) (cols, keys, valid []int) {
		pos := map[int]int{}
		add := func(j int) int {
			if j < 0 {
				return -1
			}
			if i, ok := pos[j]; ok {
				return i
			}
			pos[j] = len(cols)
			cols = append(cols, j)
			return len(cols) - 1
		}
		for i := range sd.Keys {
			keys = append(keys, add(sd.Keys[i]))
			valid = append(valid, add(sd.Valid[i]))
		}
		return cols, keys, valid
	}
	lcols, lkeys, lvalid := used(p.Left)
	rcols, rkeys, rvalid := used(p.Right)
	pairs := make([]*task, len(groups))
	lens := make([]*task, len(groups))
	for q, g := range groups {
		spec, err := encodeJoinSpec(joinSpec{How: p.How, LKeys: lkeys, LValid: lvalid, RKeys: rkeys, RValid: rvalid,
			LCols: len(lcols), RCols: len(rcols), LPieces: len(g.l), RPieces: len(g.r)})
		if err != nil {
			return nil, nil, err
		}
		t := &task{key: fmt.Sprintf("%s-pairs-%d", run, q), spec: taskSpec{Kind: kindJoinPairs, Chunk: spec},
			maxRetries: c.retries, refs: 1, priority: c.priority}
		if err := addInputs(t, 0, lcols, g.l); err != nil {
			return nil, nil, err
		}
		if err := addInputs(t, 1, rcols, g.r); err != nil {
			return nil, nil, err
		}
		pairs[q] = t
		spec, err = encodeJoinSpec(joinSpec{})
		if err != nil {
			return nil, nil, err
		}
		lens[q] = &task{key: fmt.Sprintf("%s-len-%d", run, q), spec: taskSpec{Kind: kindJoinLen, Chunk: spec, Inputs: []string{t.key}},
			deps: []*task{t}, maxRetries: c.retries, refs: 1, priority: c.priority}
	}
	tasks = append(tasks, pairs...)
	if err := c.s.add(append(slices.Clone(pairs), lens...)); err != nil {
		tasks = nil
		return nil, nil, err
	}
	lenFutures := make([]*Future, len(lens))
	for q, t := range lens {
		lenFutures[q] = c.newFuture(t, nil)
	}
	defer func() {
		for _, f := range lenFutures {
			if !done {
				f.Cancel()
			}
			f.Release()
		}
	}()
	bar := display.NewProgress("join: partitions joined", int64(len(groups)))
	var outLens []int
	var outGroups []int
	for q, t := range lens {
		if err := c.waitShuffleTask(ctx, t, ws); err != nil {
			return nil, nil, fmt.Errorf("output partition %d: %w", q, err)
		}
		v, err := lenFutures[q].Result(ctx)
		if err != nil {
			return nil, nil, c.lostOr(ws, fmt.Errorf("output partition %d: %w", q, err))
		}
		n, ok := v.([]int64)
		if !ok || len(n) != 1 {
			return nil, nil, fmt.Errorf("output partition %d: its length is a %T", q, v)
		}
		if n[0] > 0 {
			outLens = append(outLens, int(n[0]))
			outGroups = append(outGroups, q)
		}
		bar.Add(1)
	}
	bar.Done()
	if len(outGroups) == 0 {
		done = true
		return nil, nil, nil
	}
	// One gather task per output column (values, and validity where it can be null) and
	// output partition.
	type colTasks struct{ vals, valid []*task }
	outs := make([]colTasks, len(p.Out))
	for k, o := range p.Out {
		nullable := o.Valid >= 0 || (o.Fill >= 0 && o.FillValid >= 0) || (o.Fill < 0 && mayLack(p.How, o.Side))
		for _, vmode := range []bool{false, true} {
			if vmode && !nullable {
				continue
			}
			for _, q := range outGroups {
				g := groups[q]
				at := [2][]int{g.l, g.r}
				src, fill := o.Col, o.Fill
				if vmode {
					src, fill = o.Valid, o.FillValid
				}
				sp := joinSpec{Side: o.Side, Valid: vmode, Fill: o.Fill >= 0, DType: sides[o.Side][o.Col].DType()}
				if src >= 0 {
					sp.NSrc = len(at[o.Side])
				}
				if fill >= 0 {
					sp.NFill = len(at[1-o.Side])
				}
				spec, err := encodeJoinSpec(sp)
				if err != nil {
					return nil, nil, err
				}
				t := &task{key: fmt.Sprintf("%s-gather-%d-%d-%t", run, q, k, vmode), spec: taskSpec{Kind: kindJoinGather, Chunk: spec, Keep: true, Inputs: []string{pairs[q].key}},
					deps: []*task{pairs[q]}, maxRetries: c.retries, refs: 1, priority: c.priority}
				if err := addInputs(t, o.Side, []int{src}, at[o.Side]); err != nil {
					return nil, nil, err
				}
				if err := addInputs(t, 1-o.Side, []int{fill}, at[1-o.Side]); err != nil {
					return nil, nil, err
				}
				if vmode {
					outs[k].valid = append(outs[k].valid, t)
				} else {
					outs[k].vals = append(outs[k].vals, t)
				}
				keep = append(keep, t)
			}
		}
	}
	if err := c.s.add(keep); err != nil {
		keep = nil
		return nil, nil, err
	}
	gbar := display.NewProgress("join: output pieces stored", int64(len(keep)))
	for _, t := range keep {
		if err := c.waitShuffleTask(ctx, t, ws); err != nil {
			return nil, nil, fmt.Errorf("join output %s: %w", t.key, err)
		}
		gbar.Add(1)
	}
	gbar.Done()
	// Hand the kept outputs to arrays (which release them); nothing of the run fails past here.
	asArray := func(ts []*task, dt gpuarray.DType) (*gpuarray.Array, error) {
		ks := make([]plan.Kept, len(ts))
		keptMu.Lock()
		for i, t := range ts {
			kept[keptID{c.s, t.key}] = t
			ks[i] = &keptChunk{f: c.newFuture(t, nil)}
		}
		keptMu.Unlock()
		return gpuarray.FromKept(c, dt, outLens, ks)
	}
	done = true
	vals := make([]*gpuarray.Array, len(p.Out))
	valids := make([]*gpuarray.Array, len(p.Out))
	var errs []error
	for k, o := range p.Out {
		var err error
		if vals[k], err = asArray(outs[k].vals, sides[o.Side][o.Col].DType()); err != nil {
			errs = append(errs, err)
		}
		if outs[k].valid != nil {
			if valids[k], err = asArray(outs[k].valid, gpuarray.Bool); err != nil {
				errs = append(errs, err)
			}
		}
	}
	if err := errors.Join(errs...); err != nil {
		for k := range vals {
			vals[k].Release()
			valids[k].Release()
		}
		return nil, nil, err
	}
	return vals, valids, nil
}

// skewFraction is the share of the smallest worker memory limit above which one shuffled
// partition of a join is split (a heavy key would put it over its worker's limit).
const skewFraction = 8

// skewSplit is how a join's shuffled side was split: side's chunk i became pieces[i] chunks
// (1 for a chunk left whole), the other side left as it was.
type skewSplit struct {
	side   int
	pieces []int
	arrays []*gpuarray.Array // the split side's new columns, released with the shuffle's
}

// splittable returns the side of a how join whose partitions may be split, the other side's
// partition joined with each piece: the side whose rows appear once in the output however the
// other's repeat (left for inner, left, semi and anti joins; right for right joins); -1 for
// outer joins, whose both sides' unmatched rows must come out once.
func splittable(how hashjoin.How) int {
	switch how {
	case hashjoin.Inner, hashjoin.Left, hashjoin.Semi, hashjoin.Anti:
		return 0
	case hashjoin.Right:
		return 1
	}
	return -1
}

// splitSkewed splits the shuffled partitions of the splittable side whose bytes exceed
// 1/skewFraction of the smallest worker memory limit into pieces under it (rechunked and
// persisted on the cluster), so that a heavy key does not put one join task over its
// worker's limit; the other side's partition is joined with every piece.
func (c *Client) splitSkewed(ctx context.Context, ws []WorkerInfo, sides *[2][]*gpuarray.Array, how hashjoin.How) (skewSplit, error) {
	s := splittable(how)
	split := skewSplit{side: s}
	if s < 0 {
		return split, nil
	}
	var limit uint64
	for _, w := range ws {
		if w.MemoryLimit > 0 && (limit == 0 || w.MemoryLimit < limit) {
			limit = w.MemoryLimit
		}
	}
	if limit == 0 {
		return split, nil
	}
	limit /= skewFraction
	var rowBytes uint64
	for _, a := range sides[s] {
		rowBytes += uint64(a.ItemSize())
	}
	lens := sides[s][0].Chunks()[0]
	split.pieces = make([]int, len(lens))
	var sizes []int
	heavy := false
	for i, n := range lens {
		k := 1
		if b := uint64(n) * rowBytes; b > limit {
			k = min(int((b+limit-1)/limit), n)
			heavy = true
		}
		split.pieces[i] = k
		for j := 0; j < k; j++ {
			sizes = append(sizes, n/k+b2i(j < n%k))
		}
	}
	if !heavy {
		split.pieces = nil
		return split, nil
	}
	out := make([]*gpuarray.Array, len(sides[s]))
	release := func() {
		for _, x := range out {
			x.Release()
		}
	}
	for j, a := range sides[s] {
		// The pieces as slices of the partitions, concatenated: one chunk each.
		pieces := make([]*gpuarray.Array, len(sizes))
		at := 0
		for i, n := range sizes {
			pieces[i] = a.Slice(gpuarray.Span(at, at+n))
			at += n
		}
		b := gpuarray.Concat(pieces...).Persist(gpuarray.On(c), gpuarray.WithContext(ctx))
		if err := b.Err(); err != nil {
			release()
			return split, err
		}
		out[j] = b
		if !slices.Equal(b.Chunks()[0], sizes) {
			release()
			return split, fmt.Errorf("pieces of %v rows came out in chunks of %v (internal)", sizes, b.Chunks()[0])
		}
	}
	sides[s], split.arrays = out, out
	return split, nil
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// groups maps joinGroups' groups over the chunks before the split to the chunks after it: a
// group whose split-side chunk was split becomes one group per piece.
func (sp skewSplit) groups(gs []joinGroup) []joinGroup {
	if sp.pieces == nil {
		return gs
	}
	first := make([]int, len(sp.pieces))
	at := 0
	for i, k := range sp.pieces {
		first[i] = at
		at += k
	}
	var out []joinGroup
	for _, g := range gs {
		own := g.l
		if sp.side == 1 {
			own = g.r
		}
		if len(own) != 1 {
			out = append(out, g) // no chunk of the split side (kinds that keep such groups)
			continue
		}
		i := own[0]
		for j := 0; j < sp.pieces[i]; j++ {
			ng := joinGroup{l: g.l, r: g.r}
			if sp.side == 0 {
				ng.l = []int{first[i] + j}
			} else {
				ng.r = []int{first[i] + j}
			}
			out = append(out, ng)
		}
	}
	return out
}
