package gpuarray

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// GroupAggColumn is one column of GroupAggregate: the rows' group codes and the values folded
// into the groups' tables.
type GroupAggColumn struct {
	// Codes is each row's int64 group code, an expression (say a mixed radix of key columns'
	// codes); a code outside [0, groups) skips the row (a null key, a null value).
	Codes *Array
	// Values is an int64 or float64 column (NaN skipped); nil counts the rows of each code.
	Values *Array
	// The tables kept besides the count of each group's values.
	Sum, SumSq, Min, Max bool
	// Keep leaves the tables on the GPU, as the arrays of GroupAggTables' Dev fields, instead
	// of copying them back, where one GPU runs every chunk and no float minimum or maximum
	// is asked for (the device holds those as ordered words); otherwise they come back as
	// without it.
	Keep bool
}

// GroupAggTables is the per-group tables of one GroupAggColumn, groups entries each (nil
// where not asked for; SumI, MinI and MaxI for int64 values, SumF, MinF and MaxF for floats).
// Min and max of a group whose Count is 0 are not set.
type GroupAggTables struct {
	Count      []int64
	SumI       []int64
	SumF       []float64
	SumSq      []float64
	MinI, MaxI []int64
	MinF, MaxF []float64
	// The tables left on the GPU for a column that asked to Keep them (the slices above are
	// nil then): 1-d arrays of groups entries, int64 but for DevSum and DevSumSq of float
	// values (float64); nil where not asked for.
	DevCount, DevSum, DevSumSq, DevMin, DevMax *Array
}

// maxGroupAggregate is the most groups GroupAggregate takes (its tables, a few words per
// group, are in device memory; package dataframe's sort-based groupby numbers one group per
// distinct key, up to one per row).
const maxGroupAggregate = 1 << 31

// GroupAggregate is plumbing for package dataframe's GroupBy on a GPU: it computes every
// column's codes and values on the GPU that opts name (OnGPU), reading arrays held there in
// place, and folds each column into per-group tables in device memory with the dense-code
// group-aggregate kernel (shared-memory tables for few groups, global atomics otherwise); only
// the tables come back. Chunks computed or held on the host are copied to the device first,
// which the returned note (for Path) says. Integer counts, sums, minima and maxima are exact;
// float sums are added in the order the atomics take.
func GroupAggregate(groups int, cols []GroupAggColumn, opts ...ComputeOption) ([]GroupAggTables, string, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, "", err
	}
	s, ok := cfg.sched.(*gpuSched)
	if !ok || len(s.devs) == 0 {
		return nil, "", fmt.Errorf("GroupAggregate: needs a GPU scheduler (OnGPU)")
	}
	if groups <= 0 || groups > maxGroupAggregate {
		return nil, "", fmt.Errorf("GroupAggregate: %d groups (1 to %d)", groups, maxGroupAggregate)
	}
	// Every distinct array once, computed together (fused per chunk where they share inputs).
	var arrays []*Array
	index := map[*Array]int{}
	add := func(a *Array, want expr.DType) error {
		if a == nil {
			return nil
		}
		if err := a.Err(); err != nil {
			return err
		}
		if a.n.DType != want || len(a.n.Shape) != 1 {
			return fmt.Errorf("a %v array of shape %v, want 1-d %v", a.n.DType, a.n.Shape, want)
		}
		if _, ok := index[a]; !ok {
			index[a] = len(arrays)
			arrays = append(arrays, a)
		}
		return nil
	}
	for i, c := range cols {
		if c.Codes == nil {
			return nil, "", fmt.Errorf("GroupAggregate: column %d has no codes", i)
		}
		if err := add(c.Codes, expr.Int64); err != nil {
			return nil, "", fmt.Errorf("GroupAggregate: column %d's codes: %w", i, err)
		}
		if c.Values != nil {
			want := expr.Int64
			if c.Values.n.DType == expr.Float64 {
				want = expr.Float64
			}
			if err := add(c.Values, want); err != nil {
				return nil, "", fmt.Errorf("GroupAggregate: column %d's values: %w", i, err)
			}
		}
	}
	done, err := computeArrays(cfg, arrays)
	if err != nil {
		return nil, "", fmt.Errorf("GroupAggregate: %w", err)
	}
	// After Compute: a filter's partition lengths are known only then.
	chunks := done[0].n.Chunks[0]
	for _, d := range done[1:] {
		if !slices.Equal(d.n.Chunks[0], chunks) {
			return nil, "", fmt.Errorf("GroupAggregate: columns chunked %v and %v", chunks, d.n.Chunks[0])
		}
	}
	var notes []string
	for _, d := range done {
		if p := d.Path(); p != "" && !slices.Contains(notes, p) {
			notes = append(notes, p)
		}
	}
	in := &groupAggInputs{ctx: cfg.ctx, sched: s, chunks: chunks}
	defer in.free()
	order := make([]int, len(done)) // held arrays first, so uploads go beside them
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int {
		_, ha := done[a].n.Buf.(*gpuChunks)
		_, hb := done[b].n.Buf.(*gpuChunks)
		switch {
		case ha && !hb:
			return -1
		case hb && !ha:
			return 1
		}
		return 0
	})
	placed := make([][]groupAggPtr, len(done))
	for _, i := range order {
		if err := in.place(done[i]); err != nil {
			return nil, "", fmt.Errorf("GroupAggregate: %w", err)
		}
		placed[i] = in.ptrs[len(in.ptrs)-1]
	}
	in.ptrs = placed
	out := make([]GroupAggTables, len(cols))
	shared := false
	kept := 0
	for ci, c := range cols {
		states := ptx.GroupCount
		for _, st := range []struct {
			on bool
			s  ptx.GroupStates
		}{{c.Sum, ptx.GroupSum}, {c.SumSq, ptx.GroupSumSq}, {c.Min, ptx.GroupMin}, {c.Max, ptx.GroupMax}} {
			if st.on && c.Values != nil {
				states |= st.s
			}
		}
		shared = shared || cuda.GroupAggKernel(groups, c.Values != nil && c.Values.n.DType == expr.Float64, states).Shared
		codes := in.ptrs[index[c.Codes]]
		vals, float := codes, false
		if c.Values != nil {
			vals, float = in.ptrs[index[c.Values]], c.Values.n.DType == expr.Float64
		}
		if c.Keep && !(float && states&(ptx.GroupMin|ptx.GroupMax) != 0) {
			if tb, ok, err := keptGroupAgg(cfg, s, groups, float, states, chunks, codes, vals); err != nil {
				return nil, "", fmt.Errorf("GroupAggregate: column %d: %w", ci, err)
			} else if ok {
				out[ci] = tb
				kept++
				continue
			}
		}
		// One run of kernels per GPU over the chunks it holds; the tables merged on the host.
		var acc *cuda.GroupAggResult
		for _, dev := range s.devs {
			var cs []cuda.GroupAggChunk
			for i, n := range chunks {
				if codes[i].dev == dev {
					if vals[i].dev != dev {
						return nil, "", fmt.Errorf("GroupAggregate: chunk %d's codes on gpu %d, values on gpu %d (internal)", i, dev.Info.Index, vals[i].dev.Info.Index)
					}
					cs = append(cs, cuda.GroupAggChunk{Codes: codes[i].p, Vals: vals[i].p, N: int64(n)})
				}
			}
			if len(cs) == 0 {
				continue
			}
			r, err := cuda.GroupAggChunks(cfg.ctx, dev, groups, float, states, cs)
			if err != nil {
				return nil, "", fmt.Errorf("GroupAggregate: column %d on gpu %d: %w", ci, dev.Info.Index, err)
			}
			acc = mergeGroupAgg(acc, r)
		}
		if acc == nil { // no rows: the kernel's initial tables
			acc, err = cuda.GroupAggChunks(cfg.ctx, s.devs[0], groups, float, states, nil)
			if err != nil {
				return nil, "", fmt.Errorf("GroupAggregate: column %d: %w", ci, err)
			}
		}
		out[ci] = GroupAggTables{Count: acc.Count, SumI: acc.SumI, SumF: acc.SumF, SumSq: acc.SumSq, MinI: acc.MinI, MaxI: acc.MaxI, MinF: acc.MinF, MaxF: acc.MaxF}
	}
	mode := "global atomics"
	if shared {
		mode = "shared-memory tables"
	}
	note := fmt.Sprintf("group-aggregate kernels on %s (%d codes, %s, %d columns over %d chunks)", s.path(), groups, mode, len(cols), len(chunks))
	if in.uploaded > 0 {
		note += fmt.Sprintf("; %d chunks (%.3g MB) copied from the host first", in.uploaded, float64(in.uploadedBytes)/1e6)
	}
	if kept > 0 {
		note += fmt.Sprintf("; the tables of %d columns kept on the GPU", kept)
	}
	return out, strings.Join(append(notes, note), "; "), nil
}

// keptGroupAgg runs one column's kernels with its tables left on the GPU (GroupAggColumn.Keep),
// as arrays held there; ok is false, with nothing run, when the chunks are on more than one
// GPU (their tables are merged on the host).
func keptGroupAgg(cfg computeConfig, s *gpuSched, groups int, float bool, states ptx.GroupStates, chunks []int, codes, vals []groupAggPtr) (GroupAggTables, bool, error) {
	dev := s.devs[0]
	if len(codes) > 0 {
		dev = codes[0].dev
	}
	var cs []cuda.GroupAggChunk
	for i, n := range chunks {
		if codes[i].dev != dev || vals[i].dev != dev {
			return GroupAggTables{}, false, nil
		}
		cs = append(cs, cuda.GroupAggChunk{Codes: codes[i].p, Vals: vals[i].p, N: int64(n)})
	}
	runs, err := cuda.GroupAggChunksKept(cfg.ctx, dev, groups, float, states, cs)
	if err != nil {
		return GroupAggTables{}, false, err
	}
	list := states.List()
	arrays := make([]*Array, len(list))
	for j, st := range list {
		dt := dtype.Int64
		if st == ptx.GroupSumSq || (st == ptx.GroupSum && float) {
			dt = dtype.Float64
		}
		c := &DeviceChunk{dev: dev, ptr: runs[j], n: groups, dt: dt}
		a, err := HeldArray([]*DeviceChunk{c}, dt, "")
		if err != nil {
			for _, p := range runs[j:] {
				freeOn(dev, []driver.DevicePtr{p})
			}
			return GroupAggTables{}, false, err
		}
		arrays[j] = a
	}
	var tb GroupAggTables
	for j, st := range list {
		switch st {
		case ptx.GroupCount:
			tb.DevCount = arrays[j]
		case ptx.GroupSum:
			tb.DevSum = arrays[j]
		case ptx.GroupSumSq:
			tb.DevSumSq = arrays[j]
		case ptx.GroupMin:
			tb.DevMin = arrays[j]
		case ptx.GroupMax:
			tb.DevMax = arrays[j]
		}
	}
	return tb, true, nil
}

// groupAggPtr is one chunk in one GPU's memory.
type groupAggPtr struct {
	dev *cuda.Device
	p   driver.DevicePtr
}

// groupAggInputs are the device chunks GroupAggregate's kernels read: held ones pinned, the
// others uploaded (and freed after).
type groupAggInputs struct {
	ctx           context.Context
	sched         *gpuSched
	chunks        []int
	ptrs          [][]groupAggPtr
	unpins        []func()
	owned         []groupAggPtr
	uploaded      int
	uploadedBytes int64
}

// place records where array a's chunks are on the GPUs: in place when a GPU holds them in the
// kernel's words, else copied there from the host.
func (in *groupAggInputs) place(a *Array) error {
	ps := make([]groupAggPtr, len(in.chunks))
	in.ptrs = append(in.ptrs, ps)
	if g, ok := a.n.Buf.(*gpuChunks); ok && a.n.Kind == expr.KData && g.dt == a.n.DType && !g.narrow && len(g.devs) == len(in.chunks) && g.pin() {
		in.unpins = append(in.unpins, g.unpin)
		all := true
		for i := range ps {
			ps[i] = groupAggPtr{g.devs[i], g.ptr(i)}
			// A chunk on a GPU the scheduler does not run would be missed; an empty one
			// is never read.
			all = all && slices.Contains(in.sched.devs, g.devs[i]) && (ps[i].p != 0 || in.chunks[i] == 0)
		}
		if all {
			return nil
		}
	}
	v, err := a.Values()
	if err != nil {
		return err
	}
	at := 0
	for i, n := range in.chunks {
		// Beside the chunks of the arrays placed before (held ones first, GroupAggregate's
		// columns read chunk i on one GPU).
		dev := in.sched.devs[i%len(in.sched.devs)]
		for _, o := range in.ptrs[:len(in.ptrs)-1] {
			if o[i].dev != nil {
				dev = o[i].dev
				break
			}
		}
		w := cuda.EncodeWords(v.Slice(at, at+n))
		at += n
		var p driver.DevicePtr
		err := dev.Do(in.ctx, func() error {
			var err error
			if p, err = dev.Pool().Alloc(uint64(max(len(w), 1)) * 8); err != nil {
				return err
			}
			in.owned = append(in.owned, groupAggPtr{dev, p})
			if len(w) == 0 {
				return nil
			}
			return dev.CopyToDevice(p, w)
		})
		if err != nil {
			return fmt.Errorf("copy chunk %d to gpu %d: %w", i, dev.Info.Index, err)
		}
		ps[i] = groupAggPtr{dev, p}
		in.uploaded++
		in.uploadedBytes += int64(len(w)) * 8
	}
	return nil
}

// free unpins the held chunks and gives the uploaded ones back.
func (in *groupAggInputs) free() {
	for _, u := range in.unpins {
		u()
	}
	for _, o := range in.owned {
		_ = o.dev.Do(in.ctx, func() error { o.dev.Pool().Free(o.p); return nil })
	}
}

// mergeGroupAgg adds the tables of b (another GPU's chunks) into a. Min and max of a group
// one side has no values in are that side's initial words, so they are taken by counts.
func mergeGroupAgg(a, b *cuda.GroupAggResult) *cuda.GroupAggResult {
	if a == nil {
		return b
	}
	for i := range a.Count {
		switch {
		case b.Count[i] == 0:
			continue
		case a.Count[i] == 0:
			for _, t := range [][2][]int64{{a.MinI, b.MinI}, {a.MaxI, b.MaxI}} {
				if t[0] != nil {
					t[0][i] = t[1][i]
				}
			}
			for _, t := range [][2][]float64{{a.MinF, b.MinF}, {a.MaxF, b.MaxF}} {
				if t[0] != nil {
					t[0][i] = t[1][i]
				}
			}
		default:
			if a.MinI != nil {
				a.MinI[i] = min(a.MinI[i], b.MinI[i])
			}
			if a.MaxI != nil {
				a.MaxI[i] = max(a.MaxI[i], b.MaxI[i])
			}
			if a.MinF != nil {
				a.MinF[i] = math.Min(a.MinF[i], b.MinF[i])
			}
			if a.MaxF != nil {
				a.MaxF[i] = math.Max(a.MaxF[i], b.MaxF[i])
			}
		}
		a.Count[i] += b.Count[i]
	}
	for i := range a.SumI {
		a.SumI[i] += b.SumI[i]
	}
	for i := range a.SumF {
		a.SumF[i] += b.SumF[i]
	}
	for i := range a.SumSq {
		a.SumSq[i] += b.SumSq[i]
	}
	return a
}
