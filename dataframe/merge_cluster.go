package dataframe

import (
	"context"
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// columnJoiner is a scheduler that joins partitions on its workers itself: a cluster client
// (cluster.Client.JoinColumns). dataframe does not import cluster; this is the seam.
type columnJoiner interface {
	JoinColumns(ctx context.Context, left, right []*gpuarray.Array, p hashjoin.Plan) (vals, valid []*gpuarray.Array, err error)
}

// joinSide gathers one side's arrays for JoinColumns: each array once, by index.
type joinSide struct {
	t    *table
	arrs []*gpuarray.Array
	at   map[*gpuarray.Array]int
}

// persistedSide persists f where rc computes and lists every column and validity array of the
// result in one joinSide (keys added later reuse their slots); ok is false for no rows.
func persistedSide(rc *runCtx, f *Frame) (*table, joinSide, bool, error) {
	var s joinSide
	p := f.Persist(rc.opts...)
	if err := p.Err(); err != nil {
		return nil, s, false, err
	}
	t := p.done
	if rowsOf(t) == 0 {
		return t, s, false, nil
	}
	for _, c := range t.cols {
		s.add(c.arr)
		s.add(c.valid)
	}
	return t, s, true, nil
}

func (s *joinSide) add(a *gpuarray.Array) int {
	if a == nil {
		return -1
	}
	if s.at == nil {
		s.at = map[*gpuarray.Array]int{}
	}
	if i, ok := s.at[a]; ok {
		return i
	}
	s.at[a] = len(s.arrs)
	s.arrs = append(s.arrs, a)
	return len(s.arrs) - 1
}

// clusterMerge runs a merge on the workers of the cluster rc's options name (On(c)): both
// sides are persisted there, then joined by cluster.Client.JoinColumns with the strategy
// runMerge would pick (broadcast a small side, no shuffle for sides hash-partitioned on the
// key alike, else a shuffle of both). The result's columns stay on the workers. Integer,
// bool, float and datetime keys stay on the workers; string and categorical keys are coded
// in this process first (a shared dictionary), named by Path. ok is false when the merge
// does not run there (no such cluster, an empty side, a coalesced categorical key).
func clusterMerge(rc *runCtx, left, right *Frame, keys []keyPair, how hashjoin.How, o mergeOpts, plan []outCol, fields []Field) (*table, bool, error) {
	cj, isJoiner := rc.target.Scheduler.(columnJoiner)
	if !isJoiner {
		return nil, false, nil
	}
	// A coalesced key of categoricals (or a string with a categorical) needs a dictionary
	// unified in this process: the host join does it.
	for _, oc := range plan {
		if oc.coalesce == "" {
			continue
		}
		a, b := left.fieldType(oc.src), right.fieldType(oc.coalesce)
		if oc.side == 1 {
			a, b = right.fieldType(oc.src), left.fieldType(oc.coalesce)
		}
		if a == Category || b == Category {
			rc.host("merge on the cluster: key %q is categorical on one side and coalesced with the other's, done in this process, so the merge runs here", oc.src)
			return nil, false, nil
		}
	}
	persist := func(f *Frame) (*table, error) {
		p := f.Persist(rc.opts...)
		if err := p.Err(); err != nil {
			return nil, err
		}
		return p.done, nil
	}
	lt, err := persist(left)
	if err != nil {
		return nil, false, err
	}
	rt, err := persist(right)
	if err != nil {
		return nil, false, err
	}
	nl, nr := rowsOf(lt), rowsOf(rt)
	if nl == 0 || nr == 0 {
		return nil, false, nil
	}
	sides := [2]*joinSide{{t: lt}, {t: rt}}
	for _, s := range sides {
		for _, c := range s.t.cols {
			s.add(c.arr)
			s.add(c.valid)
		}
	}
	persistArr := func(a *gpuarray.Array) (*gpuarray.Array, error) {
		p := a.Persist(rc.opts...)
		return p, p.Err()
	}
	var p hashjoin.Plan
	p.How = how
	hostKeys := false
	for _, k := range keys {
		lc, err := lt.find(k.l.Name)
		if err != nil {
			return nil, false, err
		}
		rcol, err := rt.find(k.r.Name)
		if err != nil {
			return nil, false, err
		}
		kind, err := keyKind(lc.dt, rcol.dt)
		if err != nil {
			return nil, false, err
		}
		cols := [2]*column{lc, rcol}
		keyArr := [2]*gpuarray.Array{lc.arr, rcol.arr}
		switch kind {
		case "float":
			for s, c := range cols {
				if !c.dt.IsFloat() {
					if keyArr[s], err = persistArr(c.arr.AsType(gpuarray.Float64)); err != nil {
						return nil, false, err
					}
				}
			}
		case "string":
			hostKeys = true
			dict := map[string]int64{}
			for s, c := range cols {
				ht, err := rc.toHost(&table{cols: []*column{c}, rows: sides[s].t.rows})
				if err != nil {
					return nil, false, err
				}
				codes, _ := stringCodes(ht.cols[0], dict)
				a := gpuarray.FromSliceInt64(codes, gpuarray.ChunkSizes(partLens(sides[s].t)))
				if keyArr[s], err = persistArr(a); err != nil {
					return nil, false, err
				}
			}
		}
		p.Left.Keys = append(p.Left.Keys, sides[0].add(keyArr[0]))
		p.Left.Valid = append(p.Left.Valid, sides[0].add(lc.valid))
		p.Right.Keys = append(p.Right.Keys, sides[1].add(keyArr[1]))
		p.Right.Valid = append(p.Right.Valid, sides[1].add(rcol.valid))
	}
	// The output columns; a coalesced key's two columns in one array type, and strings in
	// one heap (the right side's positions moved past the left's strings).
	outCols := make([]*column, len(plan))
	for k, oc := range plan {
		src, err := sides[oc.side].t.find(oc.src)
		if err != nil {
			return nil, false, err
		}
		out := hashjoin.Out{Side: oc.side, Col: sides[oc.side].add(src.arr), Valid: sides[oc.side].add(src.valid), Fill: -1, FillValid: -1}
		col := &column{name: oc.name, dt: fields[k].DType, heap: src.heap}
		if oc.coalesce != "" {
			other, err := sides[1-oc.side].t.find(oc.coalesce)
			if err != nil {
				return nil, false, err
			}
			a, b := src.arr, other.arr
			switch {
			case fields[k].DType == String && src.heap != other.heap:
				heaps := [2]*strHeap{src.heap, other.heap}
				if oc.side == 1 {
					heaps[0], heaps[1] = other.heap, src.heap
				}
				col.heap = joinHeaps(heaps[0], heaps[1])
				// The right side's positions move past the left's strings.
				shift := int64(heaps[0].len())
				if oc.side == 1 {
					if a, err = persistArr(a.Add(shift)); err != nil {
						return nil, false, err
					}
				} else if b, err = persistArr(b.Add(shift)); err != nil {
					return nil, false, err
				}
			case src.dt != other.dt:
				adt, ok := fields[k].DType.array()
				if !ok {
					return nil, false, fmt.Errorf("column %q: no array type for %s", oc.name, fields[k].DType)
				}
				if a.DType() != adt {
					if a, err = persistArr(a.AsType(adt)); err != nil {
						return nil, false, err
					}
				}
				if b.DType() != adt {
					if b, err = persistArr(b.AsType(adt)); err != nil {
						return nil, false, err
					}
				}
			}
			out.Col = sides[oc.side].add(a)
			out.Fill, out.FillValid = sides[1-oc.side].add(b), sides[1-oc.side].add(other.valid)
		}
		outCols[k] = col
		p.Out = append(p.Out, out)
	}
	var strategy string
	switch {
	case o.broadcast > 0 && nr <= o.broadcast && how != hashjoin.Right && how != hashjoin.Outer:
		p.Strategy = hashjoin.BroadcastRight
		strategy = fmt.Sprintf("right side (%d rows) broadcast to %d left partitions", nr, len(partLens(lt)))
	case o.broadcast > 0 && nl <= o.broadcast && (how == hashjoin.Right || how == hashjoin.Inner):
		p.Strategy = hashjoin.BroadcastLeft
		strategy = fmt.Sprintf("left side (%d rows) broadcast to %d right partitions", nl, len(partLens(rt)))
	case left.layout != nil && right.layout != nil && slices.Equal(left.layout.hashedOn, keyNames(keys, 0)) &&
		slices.Equal(right.layout.hashedOn, keyNames(keys, 1)) && len(partLens(lt)) == len(partLens(rt)) && sameEncoding(keys):
		p.Strategy = hashjoin.Aligned
		strategy = fmt.Sprintf("both sides hash-partitioned on the key (%d partitions), no shuffle", len(partLens(lt)))
	default:
		p.Strategy, p.N = hashjoin.Shuffle, max(len(partLens(lt)), len(partLens(rt)))
		strategy = fmt.Sprintf("both sides hash-partitioned on the key into %d partitions, moved worker to worker", p.N)
	}
	if hostKeys {
		rc.host("merge: string and categorical keys coded on the host (a dictionary shared by both sides)")
	}
	ctx := rc.target.Context
	if ctx == nil {
		ctx = context.Background()
	}
	vals, valid, err := cj.JoinColumns(ctx, sides[0].arrs, sides[1].arrs, p)
	if err != nil {
		return nil, false, err
	}
	rc.mu.Lock()
	rc.notes = append(rc.notes, fmt.Sprintf("merge: hash join on the cluster's workers (dataframe/hashjoin, in their host memory, GPU workers' too), %s; the result stays there", strategy))
	rc.mu.Unlock()
	if vals == nil {
		ht := &hostTable{}
		for _, c := range outCols {
			adt, _ := c.dt.array()
			ht.cols = append(ht.cols, &hostCol{name: c.name, dt: c.dt, vals: dtype.Make(adt, 0), heap: c.heap})
		}
		t, err := tableOf(ht)
		return t, true, err
	}
	lens := vals[0].Chunks()[0]
	n := 0
	for _, l := range lens {
		n += l
	}
	res := &table{rows: gpuarray.Arange(n, gpuarray.WithDType(gpuarray.Int64), gpuarray.ChunkSizes(lens))}
	for k, c := range outCols {
		c.arr, c.valid = vals[k], valid[k]
		res.cols = append(res.cols, c)
	}
	return res, true, nil
}

func rowsOf(t *table) int {
	n := 0
	for _, l := range partLens(t) {
		n += l
	}
	return n
}

// joinHeaps returns a heap of a's strings, then b's.
func joinHeaps(a, b *strHeap) *strHeap {
	h := &strHeap{offsets: make([]int64, 0, len(a.offsets)+len(b.offsets)-1), data: make([]byte, 0, len(a.data)+len(b.data))}
	h.offsets = append(h.offsets, a.offsets...)
	h.data = append(h.data, a.data...)
	base := int64(len(a.data))
	for _, o := range b.offsets[1:] {
		h.offsets = append(h.offsets, base+o)
	}
	h.data = append(h.data, b.data...)
	return h
}
