package dataframe

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// Merge on a GPU with the keys read where they are held (GPUNOTES_GPU_JOIN=device, not yet the
// default: no GPU has run it). Where heldSides gathers the output on the GPU, the join itself
// runs there on the sides' key columns as held (int32 and int64 columns, categorical codes
// looked up in a table of the two dictionaries built on the host, which Path names): the key
// codes are encoded on the GPU, the table built and probed there, and the joined rows kept
// there as int32 rows for the output columns' gather (gpuarray.JoinOnGPU, TakeRowsAtOnGPU),
// so that neither the keys nor the pairs cross PCIe; only counts come back. The strategy and
// the row order are the landed path's (broadcast, aligned, or the probe rows in the order of
// their hash partitions), so the result equals the CPU's merge row for row. Where it cannot
// run (a string, float or nullable key, right and outer merges, an empty side), Path says
// why and the landed path runs.

// heldJoinOn selects the device join on held keys (GPUNOTES_GPU_JOIN=device).
var heldJoinOn = os.Getenv("GPUNOTES_GPU_JOIN") == "device"

// The device calls of the held join (variables so that tests without a GPU can run the rest of
// the path over host emulations of them).
var (
	joinOnGPUDevice  = gpuarray.JoinOnGPU
	takeRowsAtDevice = gpuarray.TakeRowsAtOnGPU
)

// dictTables returns the tables that map a categorical key's codes of each side into codes of
// one dictionary of both sides (the codes joinKeys gives them): nil for a side whose codes
// are already those (the left side's, and the right side's when it has the same categories
// in the same order: then no dictionary is built, categories being distinct).
func dictTables(l, r *strHeap) (lt, rt []int64) {
	if l == r || (slices.Equal(l.offsets, r.offsets) && bytes.Equal(l.data, r.data)) {
		return nil, nil
	}
	dict := map[string]int64{}
	codes := func(h *strHeap) []int64 {
		out := make([]int64, h.len())
		same := true
		for j := range out {
			out[j] = unify(dict, h.at(int64(j)))
			same = same && out[j] == int64(j)
		}
		if same {
			return nil
		}
		return out
	}
	return codes(l), codes(r)
}

// heldMerge runs a merge whose output g gathers on the GPU as a join on the keys held there.
// why, when not "", says why it did not (the caller takes the landed path).
func heldMerge(rc *runCtx, left, right *Frame, g *heldGather, keys []keyPair, how hashjoin.How, o mergeOpts) (t *table, why string, err error) {
	mode := gpuarray.JoinInner
	switch how {
	case hashjoin.Inner:
	case hashjoin.Left:
		mode = gpuarray.JoinKeep
	case hashjoin.Semi:
		mode = gpuarray.JoinSemi
	case hashjoin.Anti:
		mode = gpuarray.JoinAnti
	default:
		return nil, fmt.Sprintf("a %v merge", how), nil
	}
	llens, rlens := partLens(g.lt), partLens(g.rt)
	nl, nr := sum(llens), sum(rlens)
	if nl == 0 || nr == 0 {
		return nil, "an empty side", nil
	}
	var lk, rk []*gpuarray.Array
	var ltabs, rtabs [][]int64
	var dicts []string
	for _, k := range keys {
		lc, err := g.lt.find(k.l.Name)
		if err != nil {
			return nil, "", err
		}
		rcol, err := g.rt.find(k.r.Name)
		if err != nil {
			return nil, "", err
		}
		if lc.valid != nil || rcol.valid != nil {
			return nil, fmt.Sprintf("key %q has nulls", k.l.Name), nil
		}
		kind, err := keyKind(lc.dt, rcol.dt)
		if err != nil {
			return nil, "", fmt.Errorf("key %q and %q: %w", lc.name, rcol.name, err)
		}
		var lt, rt []int64
		switch {
		case kind == "string" && lc.dt == Category && rcol.dt == Category:
			lt, rt = dictTables(lc.heap, rcol.heap)
			if lt != nil || rt != nil {
				dicts = append(dicts, fmt.Sprintf("%q", k.l.Name))
			}
		case kind != "int":
			return nil, fmt.Sprintf("key %q is %s (int32, int64 and categorical keys are read on the GPU)", k.l.Name, lc.dt), nil
		}
		lk, rk = append(lk, lc.arr), append(rk, rcol.arr)
		ltabs, rtabs = append(ltabs, lt), append(rtabs, rt)
	}
	aligned := left.layout != nil && right.layout != nil && slices.Equal(left.layout.hashedOn, keyNames(keys, 0)) &&
		slices.Equal(right.layout.hashedOn, keyNames(keys, 1)) && len(llens) == len(rlens) && sameEncoding(keys)
	anyRight := slices.ContainsFunc(g.plan, func(oc outCol) bool { return oc.side == 1 })
	spec := gpuarray.HeldJoinKeys{Build: rk, Probe: lk, BuildTables: rtabs, ProbeTables: ltabs, Mode: mode, BuildRows: anyRight}
	swapped := false
	var strategy string
	switch {
	case o.broadcast > 0 && nr <= o.broadcast:
		strategy = fmt.Sprintf("right side (%d rows) broadcast to %d left partitions", nr, len(llens))
		spec.Split = llens
	case o.broadcast > 0 && nl <= o.broadcast && how == hashjoin.Inner:
		strategy = fmt.Sprintf("left side (%d rows) broadcast to %d right partitions", nl, len(rlens))
		spec = gpuarray.HeldJoinKeys{Build: lk, Probe: rk, BuildTables: ltabs, ProbeTables: rtabs, Mode: mode, Split: rlens}
		swapped = true
	case aligned:
		strategy = fmt.Sprintf("both sides hash-partitioned on the key (%d partitions), no shuffle", len(llens))
		spec.Split = llens
	default:
		n := max(len(llens), len(rlens))
		strategy = fmt.Sprintf("both sides hash-partitioned on the key into %d partitions", n)
		spec.Parts = n
	}
	res, why, err := joinOnGPUDevice(spec, rc.opts...)
	if err != nil || why != "" {
		return nil, why, err
	}
	lrows, rrows := res.Probe, res.Build
	if swapped {
		lrows, rrows = res.Build, res.Probe
	}
	total := sum(res.Lens)
	if total == 0 {
		return nil, "no rows joined", nil
	}
	out := &table{cols: make([]*column, len(g.plan))}
	sides := [2]*table{g.lt, g.rt}
	idx := [2]*gpuarray.Array{lrows, rrows}
	for side := range 2 {
		var at []int
		var xs []*gpuarray.Array
		var srcs []*column
		for k, oc := range g.plan {
			if oc.side != side {
				continue
			}
			c, err := sides[side].find(oc.src)
			if err != nil {
				return nil, "", err
			}
			at, xs, srcs = append(at, k), append(xs, c.arr), append(srcs, c)
		}
		if len(xs) == 0 {
			continue
		}
		if idx[side] == nil {
			return nil, "", fmt.Errorf("merge: no %s rows from the device join", [2]string{"left", "right"}[side])
		}
		var valid *gpuarray.Array
		if side == 1 && (how == hashjoin.Left || how == hashjoin.Anti) {
			// A right row is missing where the row is -1: the rows' least, on the GPU.
			least, err := idx[side].Min().Item(rc.opts...)
			if err != nil {
				return nil, "", fmt.Errorf("merge: the right rows' least: %w", err)
			}
			if least < 0 {
				valid = idx[side].Ge(int32(0))
			}
		}
		got, why, err := takeRowsAtDevice(xs, idx[side], rc.opts...)
		if err != nil || why != "" {
			return nil, why, err
		}
		for j, k := range at {
			out.cols[k] = &column{name: g.plan[k].name, dt: srcs[j].dt, arr: got[j], valid: valid, heap: srcs[j].heap}
		}
	}
	var lens []int
	for _, n := range res.Lens {
		if n > 0 {
			lens = append(lens, n)
		}
	}
	out.rows = gpuarray.Arange(0, total, 1, gpuarray.ChunkSizes(lens), gpuarray.WithDType(gpuarray.Int64))
	rc.device(fmt.Sprintf("merge: device hash join on %s on the keys held there (GPUNOTES_GPU_JOIN=device: key codes encoded on the GPU, "+
		"the joined rows kept there for the output columns' gather, %d rows), %s; sides computed on %s", res.Where, total, strategy, rc.target.Backend))
	if len(dicts) > 0 {
		rc.host("merge: one dictionary of both sides built on the host for the categorical keys %s (a table of codes uploaded, the key codes looked up in it on the GPU)",
			strings.Join(dicts, ", "))
	}
	if res.HostNote != "" {
		rc.host("merge: %s", res.HostNote)
	}
	return out, "", nil
}

func sum(xs []int) int {
	n := 0
	for _, x := range xs {
		n += x
	}
	return n
}
