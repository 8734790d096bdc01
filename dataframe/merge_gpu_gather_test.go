package dataframe

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// hostTakeRows computes what gpuarray.TakeRowsOnGPU gives, on the host: each array's rows
// (zero at -1) in a chunk per non-empty piece, and the rows themselves as an int32 array when
// keep; calls counts the arrays it gathered.
func hostTakeRows(calls *int) func([]*gpuarray.Array, [][]int32, bool, ...gpuarray.ComputeOption) ([]*gpuarray.Array, *gpuarray.Array, string, error) {
	return func(xs []*gpuarray.Array, pieces [][]int32, keep bool, opts ...gpuarray.ComputeOption) ([]*gpuarray.Array, *gpuarray.Array, string, error) {
		var rows []int32
		var lens []int
		for _, p := range pieces {
			if len(p) > 0 {
				rows, lens = append(rows, p...), append(lens, len(p))
			}
		}
		at := make([]int, len(rows))
		for i, r := range rows {
			at[i] = max(int(r), 0)
		}
		out := make([]*gpuarray.Array, len(xs))
		for k, x := range xs {
			v, err := x.Values(opts...)
			if err != nil {
				return nil, nil, "", err
			}
			g := dtype.Make(v.DType(), len(rows))
			dtype.Gather(g, v, at)
			zero := dtype.Make(v.DType(), 1)
			for i, r := range rows {
				if r < 0 {
					dtype.Copy(g.Slice(i, i+1), zero)
				}
			}
			out[k] = gpuarray.WrapValues(g, gpuarray.ChunkSizes(lens))
			*calls++
		}
		if !keep {
			return out, nil, "", nil
		}
		iv, err := dtype.Of(rows)
		if err != nil {
			return nil, nil, "", err
		}
		return out, gpuarray.WrapValues(iv, gpuarray.ChunkSizes(lens)), "", nil
	}
}

// gatherSide is a side of a device gather test without nulls: an int32 key, an int64 key, a
// categorical key (categories differing by side), a string, a float64 and a datetime column,
// in parts partitions.
func gatherSide(r *rand.Rand, n, parts, card int, tag string) *Frame {
	k32, k64 := make([]int32, n), make([]int64, n)
	kc, s := make([]string, n), make([]string, n)
	f := make([]float64, n)
	for i := range n {
		k32[i], k64[i] = int32(r.IntN(card)), int64(r.IntN(card))-int64(card/3)
		kc[i] = fmt.Sprintf("%s%d", tag[:1], r.IntN(card))
		if r.IntN(2) == 0 {
			kc[i] = fmt.Sprintf("c%d", r.IntN(card))
		}
		s[i], f[i] = fmt.Sprintf("%s-%d", tag, i), r.NormFloat64()
	}
	return FromSlices([]string{"k32", "k64", "kcs", tag + "s", tag + "f"}, []any{k32, k64, kc, s, f}, NPartitions(parts)).
		Assign("kc", Col("kcs").ToCategory()).Drop("kcs").
		Assign(tag+"t", Col("k64").Add(1_700_000_000).AsType(DatetimeS))
}

// TestMergeDeviceGather runs merges through the device path over host emulations of the
// device join and of the device row gather: inner, left, semi and anti merges on int32, int64
// and categorical keys, broadcast and shuffled, gather every output column through the row
// gather (the right side's unmatched rows of a left join null there) and equal the host
// join's frame row for row, with Path naming the key columns' copy and the gather; right and
// outer merges (a coalesced key) and a right side with nulls (but for semi merges)
// gather on the host, and so does a
// device path whose row gather has no GPU (the real TakeRowsOnGPU with CPU options), which
// Path says.
func TestMergeDeviceGather(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 12))
	l := gatherSide(r, 3000, 3, 40, "lv")
	rt := gatherSide(r, 700, 2, 40, "rv")
	nullable := rt.Assign("rvf", Col("rvf").Where(Col("k32").Gt(3), nil))
	for _, keys := range [][]string{{"k32"}, {"k64"}, {"kc"}, {"k32", "kc"}} {
		for _, how := range []string{"inner", "left", "right", "outer", "semi", "anti"} {
			for _, bc := range []int{0, DefaultBroadcastRows} {
				for _, variant := range []string{"emulated", "no GPU", "nulls"} {
					b := rt
					if variant == "nulls" {
						b = nullable
					}
					m := Merge(l, b, On(keys...), How(how), BroadcastRows(bc))
					what := fmt.Sprintf("keys %v %s broadcast %d %s", keys, how, bc, variant)
					cpu, err := m.Compute()
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					calls := 0
					func() {
						defer emulateDeviceMerge(0, new(int))()
						if variant != "no GPU" {
							saved := takeRowsDevice
							takeRowsDevice = hostTakeRows(&calls)
							defer func() { takeRowsDevice = saved }()
						}
						dev, err := m.Compute()
						if err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						sameFrames(t, what, dev, cpu, 0)
						n, _ := cpu.Len()
						p := dev.Path()
						// Semi merges give the left columns alone: the right side's nulls do not
						// stop the gather.
						gatherable := how != "right" && how != "outer" && n > 0 && (variant != "nulls" || how == "semi")
						onDevice := variant != "no GPU" && gatherable
						if onDevice != (calls > 0) {
							t.Fatalf("%s: %d arrays gathered by the row gather, path %q", what, calls, p)
						}
						switch {
						case onDevice && (calls != len(cpu.Columns()) || !strings.Contains(p, "key columns copied to the host") || !strings.Contains(p, "for the output columns' gather there")):
							t.Fatalf("%s: %d arrays gathered for %d columns, path %q", what, calls, len(cpu.Columns()), p)
						case variant == "no GPU" && gatherable && !strings.Contains(p, "not on the GPU: not a GPU compute"):
							t.Fatalf("%s: path %q", what, p)
						case !onDevice && !strings.Contains(p, "output columns gathered there"):
							t.Fatalf("%s: path %q", what, p)
						}
					}()
				}
			}
		}
	}
}
