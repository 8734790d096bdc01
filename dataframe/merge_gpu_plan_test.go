package dataframe

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// hostHashJoin computes what gpuarray.HashJoin's kernels compute, on the host, with
// dataframe/hashjoin's table (whose order the kernels keep: TestHashJoinPTX checks them
// against it), so that the device merge's planning, orientation and splitting run without a
// GPU. A build key on more than skew rows (0: no limit) gives a HostNote, as a key too long
// for the device does, and counts in hits.
func hostHashJoin(skew int, hits *int) func(build, probe [][]int64, mode gpuarray.JoinMode, part int, opts ...gpuarray.ComputeOption) (*gpuarray.JoinPairs, string, error) {
	return func(build, probe [][]int64, mode gpuarray.JoinMode, part int, opts ...gpuarray.ComputeOption) (*gpuarray.JoinPairs, string, error) {
		host := ""
		if skew > 0 {
			runs := map[string]int{}
			for i := range build[0] {
				var k strings.Builder
				for _, c := range build {
					fmt.Fprintf(&k, "%d,", c[i])
				}
				if runs[k.String()]++; runs[k.String()] > skew && host == "" {
					*hits++
					host = "emulated: build rows laid out on the host"
				}
			}
		}
		t, err := hashjoin.Build(build)
		if err != nil {
			return nil, "", err
		}
		note := "host emulation of the device hash join"
		if mode == gpuarray.JoinSemi || mode == gpuarray.JoinAnti {
			in, err := t.Contains(probe)
			if err != nil {
				return nil, "", err
			}
			r := &gpuarray.JoinPairs{Probe: []int32{}, HostNote: host}
			for i, ok := range in {
				if ok == (mode == gpuarray.JoinSemi) {
					r.Probe = append(r.Probe, int32(i))
				}
			}
			return r, note, nil
		}
		pi, bi, matched, err := t.Probe(probe, mode == gpuarray.JoinKeep)
		return &gpuarray.JoinPairs{Probe: pi, Build: bi, Matched: matched, HostNote: host}, note, err
	}
}

func hostHashPartition(keys [][]int64, n int, _ ...gpuarray.ComputeOption) ([]int32, string, error) {
	p, err := hashjoin.Partition(keys, n)
	return p, "host emulation of the device partitioning", err
}

// emulateDeviceMerge makes Merge take the device path on the CPU over hostHashJoin(skew, hits)
// until the returned function restores it.
func emulateDeviceMerge(skew int, hits *int) (restore func()) {
	j, p, o := hashJoinDevice, hashPartitionDevice, mergeDeviceOpts
	hashJoinDevice, hashPartitionDevice = hostHashJoin(skew, hits), hostHashPartition
	mergeDeviceOpts = func(rc *runCtx) ([]gpuarray.ComputeOption, bool) { return rc.opts, true }
	return func() { hashJoinDevice, hashPartitionDevice, mergeDeviceOpts = j, p, o }
}

// mergeSide is a random side of a device merge test: keys of every type (a nullable integer,
// a bool, a nullable datetime, a categorical whose categories differ by side, a nullable
// string, a float with NaNs and nulls) and a value column, in parts partitions.
func mergeSide(r *rand.Rand, n, parts, card int, tag string) *Frame {
	ki, kiV := make([]int64, n), make([]bool, n)
	kb := make([]bool, n)
	kc := make([]string, n)
	ks, ksV := make([]string, n), make([]bool, n)
	kf, kfV := make([]float64, n), make([]bool, n)
	v := make([]int64, n)
	for i := range n {
		ki[i], kiV[i] = int64(r.IntN(card))-int64(card/2), r.IntN(9) != 0
		kb[i] = r.IntN(3) == 0
		kc[i] = fmt.Sprintf("%s%d", tag[:1], r.IntN(min(card, 6)))
		if r.IntN(2) == 0 {
			kc[i] = fmt.Sprintf("c%d", r.IntN(min(card, 6)))
		}
		ks[i], ksV[i] = fmt.Sprintf("s%d", r.IntN(card)), r.IntN(11) != 0
		kf[i], kfV[i] = float64(r.IntN(card))/4, r.IntN(13) != 0
		if r.IntN(17) == 0 {
			kf[i] = math.NaN()
		}
		if r.IntN(19) == 0 {
			kf[i] = math.Copysign(0, -1)
		}
		v[i] = int64(i)
	}
	return FromSlices([]string{"ki", "kb", "kcs", "ks", "kf", tag},
		[]any{Nullable(ki, kiV), kb, kc, Nullable(ks, ksV), Nullable(kf, kfV), v}, NPartitions(parts)).
		Assign("kc", Col("kcs").ToCategory()).Drop("kcs").
		Assign("kt", Col("ki").Add(1_700_000_000).AsType(DatetimeS))
}

// TestMergeDevicePlan runs merges through the device path over host emulations of the device
// calls: for every join kind, every key type alone and two keys together, broadcast, shuffled
// and aligned (both sides Shuffled alike), the result equals the host join's row for row and
// Path names the device join, its strategy and the steps on the host, among them the layout of
// a build key on more rows than the device orders.
func TestMergeDevicePlan(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 3))
	l := mergeSide(r, 400, 3, 12, "lv")
	rt := mergeSide(r, 150, 2, 12, "rv")
	keysets := [][]string{{"ki"}, {"kb"}, {"kt"}, {"kc"}, {"ks"}, {"kf"}, {"ki", "kc"}}
	hows := []string{"inner", "left", "right", "outer", "semi", "anti"}
	fallbacks := 0
	for _, skew := range []int{0, 30} {
		for _, keys := range keysets {
			for _, how := range hows {
				for _, strat := range []string{"broadcast", "shuffle", "aligned"} {
					opts := []MergeOption{On(keys...), How(how), BroadcastRows(0)}
					a, b := l, rt
					switch strat {
					case "broadcast":
						opts[2] = BroadcastRows(DefaultBroadcastRows)
					case "aligned":
						var err error
						if a, err = l.Shuffle(keys, 4); err == nil {
							b, err = rt.Shuffle(keys, 4)
						}
						if err != nil {
							t.Fatal(err)
						}
					}
					m := Merge(a, b, opts...)
					cpu, err := m.Compute()
					if err != nil {
						t.Fatalf("%v %s %s: %v", keys, how, strat, err)
					}
					what := fmt.Sprintf("keys %v %s %s skew %d", keys, how, strat, skew)
					func() {
						hits := 0
						defer emulateDeviceMerge(skew, &hits)()
						dev, err := m.Compute()
						if err != nil {
							t.Fatalf("%s: %v", what, err)
						}
						sameFrames(t, what, dev, cpu, 0)
						p := dev.Path()
						if !strings.Contains(p, "merge: host emulation of the device") || !strings.Contains(p, "output columns gathered there") {
							t.Fatalf("%s: path %q", what, p)
						}
						if strings.Contains(p, "hash join on the host (dataframe/hashjoin)") {
							t.Fatalf("%s: the device path names the host join: %q", what, p)
						}
						fallbacks += hits
						if onHost := strings.Contains(p, "merge: emulated: build rows laid out on the host"); onHost != (hits > 0) {
							t.Fatalf("%s: %d joins laid out build rows on the host, path %q", what, hits, p)
						}
						if (keys[0] == "ks" || keys[0] == "kc") && !strings.Contains(p, "one dictionary of both sides for") {
							t.Fatalf("%s: the dictionary step is not named: %q", what, p)
						}
					}()
				}
			}
		}
	}
	if fallbacks == 0 {
		t.Fatal("no join laid out build rows on the host: the skew limit was never reached")
	}
}
