package dataframe

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// hostJoinOnGPU computes what gpuarray.JoinOnGPU gives, on the host: the key codes (looked
// up in their tables), dataframe/hashjoin's pairs in probe row order, split at Split's probe
// rows or put in the order of Parts hash partitions (what the device's kernels compute:
// TestHeldJoinPTX checks them against the same), as int32 arrays with a chunk per non-empty
// piece; calls counts the joins.
func hostJoinOnGPU(calls *int) func(gpuarray.HeldJoinKeys, ...gpuarray.ComputeOption) (*gpuarray.HeldJoinRows, string, error) {
	return func(k gpuarray.HeldJoinKeys, opts ...gpuarray.ComputeOption) (*gpuarray.HeldJoinRows, string, error) {
		*calls++
		codes := func(xs []*gpuarray.Array, tabs [][]int64) (hashjoin.Keys, error) {
			var out hashjoin.Keys
			for i, x := range xs {
				v, err := x.Values(opts...)
				if err != nil {
					return nil, err
				}
				c := dtype.Convert(v, dtype.Int64).Int64s()
				if i < len(tabs) && tabs[i] != nil {
					m := make([]int64, len(c))
					for j, x := range c {
						m[j] = tabs[i][x]
					}
					c = m
				}
				out = append(out, c)
			}
			return out, nil
		}
		b, err := codes(k.Build, k.BuildTables)
		if err != nil {
			return nil, "", err
		}
		p, err := codes(k.Probe, k.ProbeTables)
		if err != nil {
			return nil, "", err
		}
		tab, err := hashjoin.Build(b)
		if err != nil {
			return nil, "", err
		}
		var pi, bi []int32
		if k.Mode == gpuarray.JoinSemi || k.Mode == gpuarray.JoinAnti {
			in, err := tab.Contains(p)
			if err != nil {
				return nil, "", err
			}
			for i, ok := range in {
				if ok == (k.Mode == gpuarray.JoinSemi) {
					pi, bi = append(pi, int32(i)), append(bi, -1)
				}
			}
		} else if pi, bi, _, err = tab.Probe(p, k.Mode == gpuarray.JoinKeep); err != nil {
			return nil, "", err
		}
		var pp, bp [][]int32
		if k.Parts > 0 {
			part, err := hashjoin.Partition(p, k.Parts)
			if err != nil {
				return nil, "", err
			}
			pp, bp = make([][]int32, k.Parts), make([][]int32, k.Parts)
			for i, j := range pi {
				q := part[j]
				pp[q], bp[q] = append(pp[q], j), append(bp[q], bi[i])
			}
		} else {
			lo, at := 0, 0
			for _, n := range k.Split {
				var a, c []int32
				for at < len(pi) && int(pi[at]) < lo+n {
					a, c = append(a, pi[at]), append(c, bi[at])
					at++
				}
				pp, bp = append(pp, a), append(bp, c)
				lo += n
			}
		}
		res := &gpuarray.HeldJoinRows{Where: "gpu (host emulation)"}
		var all, allb []int32
		var lens []int
		for i := range pp {
			res.Lens = append(res.Lens, len(pp[i]))
			if len(pp[i]) > 0 {
				lens = append(lens, len(pp[i]))
			}
			all, allb = append(all, pp[i]...), append(allb, bp[i]...)
		}
		if len(all) == 0 {
			return res, "", nil
		}
		wrap := func(v []int32) *gpuarray.Array {
			s, _ := dtype.Of(v)
			return gpuarray.WrapValues(s, gpuarray.ChunkSizes(lens))
		}
		res.Probe = wrap(all)
		if k.Mode <= gpuarray.JoinKeep || (k.Mode == gpuarray.JoinAnti && k.BuildRows) {
			res.Build = wrap(allb)
		}
		return res, "", nil
	}
}

// hostTakeRowsAt is hostTakeRows at rows given as an array (its chunks the pieces).
func hostTakeRowsAt(calls *int) func([]*gpuarray.Array, *gpuarray.Array, ...gpuarray.ComputeOption) ([]*gpuarray.Array, string, error) {
	take := hostTakeRows(calls)
	return func(xs []*gpuarray.Array, rows *gpuarray.Array, opts ...gpuarray.ComputeOption) ([]*gpuarray.Array, string, error) {
		v, err := rows.Values(opts...)
		if err != nil {
			return nil, "", err
		}
		r := v.Int32s()
		var pieces [][]int32
		at := 0
		for _, n := range rows.Chunks()[0] {
			pieces = append(pieces, r[at:at+n])
			at += n
		}
		out, _, why, err := take(xs, pieces, false, opts...)
		return out, why, err
	}
}

// TestMergeHeldJoin runs merges through the join on held keys (GPUNOTES_GPU_JOIN=device) over
// host emulations of the device calls: inner, left, semi and anti merges on int32, int64 and
// categorical keys (categories differing by side: a table of both dictionaries) and two keys,
// broadcast right and left, shuffled and aligned, equal the landed device path's frame row
// for row (over its emulations; and that the CPU's, but for a left side broadcast, whose row
// order the CPU's direct-address join changes),
// with Path naming the held join (and the dictionary built on the host); right and outer
// merges, string keys and keys with nulls take the landed path, which Path says.
func TestMergeHeldJoin(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 41))
	l := gatherSide(r, 3000, 3, 40, "lv")
	rt := gatherSide(r, 700, 2, 40, "rv")
	var joins, gathers int
	// emulate makes Merge take the held join over the host emulations until restore.
	emulate := func() (restore func()) {
		saved := heldJoinOn
		heldJoinOn = true
		undo := emulateDeviceMerge(0, new(int))
		sj, st, sg := joinOnGPUDevice, takeRowsAtDevice, takeRowsDevice
		joinOnGPUDevice, takeRowsAtDevice, takeRowsDevice = hostJoinOnGPU(&joins), hostTakeRowsAt(&gathers), hostTakeRows(new(int))
		return func() {
			joinOnGPUDevice, takeRowsAtDevice, takeRowsDevice = sj, st, sg
			undo()
			heldJoinOn = saved
		}
	}
	withStr := l.Assign("ks", Col("kc").AsType(String))
	withNull := rt.Assign("k32", Col("k32").Where(Col("k64").Gt(3), nil))
	for _, keys := range [][]string{{"k32"}, {"k64"}, {"kc"}, {"k32", "kc"}, {"ks"}, {"null"}} {
		for _, how := range []string{"inner", "left", "right", "outer", "semi", "anti"} {
			for _, strat := range []string{"broadcast", "broadcast left", "shuffle", "aligned"} {
				a, b := l, rt
				on := keys
				switch keys[0] {
				case "ks":
					a, b = withStr, rt.Assign("ks", Col("kc").AsType(String))
				case "null":
					b, on = withNull, []string{"k32"}
				}
				opts := []MergeOption{On(on...), How(how), BroadcastRows(0)}
				switch strat {
				case "broadcast":
					opts[2] = BroadcastRows(DefaultBroadcastRows)
				case "broadcast left":
					a, b = b, a
					opts[2] = BroadcastRows(1000)
				case "aligned":
					var err error
					if a, err = a.Shuffle(on, 4); err == nil {
						b, err = b.Shuffle(on, 4)
					}
					if err != nil {
						t.Fatal(err)
					}
				}
				m := Merge(a, b, opts...)
				what := fmt.Sprintf("keys %v %s %s", keys, how, strat)
				cpu, err := m.Compute()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if strings.Contains(cpu.Path(), "device") {
					t.Fatalf("%s: the CPU's merge took a device path: %q", what, cpu.Path())
				}
				// The landed device path (over its host emulations) is the reference where the
				// CPU's order differs (a left side broadcast: the CPU looks the left rows up in
				// a direct-address table of the right side).
				undo := emulateDeviceMerge(0, new(int))
				sg := takeRowsDevice
				takeRowsDevice = hostTakeRows(new(int))
				landed, err := m.Compute()
				takeRowsDevice = sg
				undo()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if strat != "broadcast left" {
					sameFrames(t, what+" (landed device path and CPU)", landed, cpu, 0)
				}
				joins, gathers = 0, 0
				restore := emulate()
				got, err := m.Compute()
				restore()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				sameFrames(t, what, got, landed, 0)
				p := got.Path()
				n, _ := cpu.Len()
				held := how != "right" && how != "outer" && keys[0] != "ks" && keys[0] != "null" && n > 0
				switch {
				case held && (joins != 1 || gathers != len(cpu.Columns()) || !strings.Contains(p, "key codes encoded on the GPU") || strings.Contains(p, "not taken")):
					t.Fatalf("%s: %d joins, %d gathers for %d columns, path %q", what, joins, gathers, len(cpu.Columns()), p)
				case held && strings.Contains(keys[len(keys)-1], "kc") && !strings.Contains(p, "one dictionary of both sides built on the host for the categorical keys \"kc\""):
					t.Fatalf("%s: path %q", what, p)
				case !held && (gathers != 0 || !strings.Contains(p, "(GPUNOTES_GPU_JOIN=device) not taken: ")):
					t.Fatalf("%s: %d gathers at held rows, path %q", what, gathers, p)
				}
				if strat == "shuffle" && held && !strings.Contains(p, "hash-partitioned on the key into 3 partitions") {
					t.Fatalf("%s: path %q", what, p)
				}
			}
		}
	}
}

// TestDictTables: the tables of two categoricals' dictionaries give the codes joinKeys gives
// (one dictionary, the left side's first), nil for a side already in them, and none at all
// for equal dictionaries.
func TestDictTables(t *testing.T) {
	a, b := heapOf([]string{"x", "y", "z"}), heapOf([]string{"z", "w", "x"})
	lt, rt := dictTables(a, b)
	if lt != nil || !slices.Equal(rt, []int64{2, 3, 0}) {
		t.Fatalf("tables %v %v", lt, rt)
	}
	if lt, rt = dictTables(b, a); lt != nil || !slices.Equal(rt, []int64{2, 3, 0}) {
		t.Fatalf("swapped: tables %v %v", lt, rt)
	}
	if lt, rt = dictTables(a, heapOf([]string{"x", "y", "z"})); lt != nil || rt != nil {
		t.Fatalf("equal dictionaries: tables %v %v", lt, rt)
	}
	if lt, rt = dictTables(a, heapOf([]string{"x", "y"})); lt != nil || rt != nil {
		t.Fatalf("a prefix: tables %v %v", lt, rt)
	}
}
