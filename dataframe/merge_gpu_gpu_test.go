package dataframe

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestGPUMergeMatchesCPU runs merges with OnGPU (the device hash join) and compares them with
// the CPU's row for row: every join kind, every key type alone and two keys together,
// broadcast, shuffled and aligned, and a bool key whose build side has more rows of one key
// than the device orders (laid out on the host, which Path names); Path names the device join.
// It logs the time of each kind's merges on both. -short tries two of the key sets.
func TestGPUMergeMatchesCPU(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(33, 5))
	l := mergeSide(r, 12000, 4, 2000, "lv")
	rt := mergeSide(r, 3000, 3, 2000, "rv")
	var cpuTime, gpuTime time.Duration
	keysets := [][]string{{"ki"}, {"kb"}, {"kt"}, {"kc"}, {"ks"}, {"kf"}, {"ki", "kc"}}
	if testing.Short() {
		keysets = [][]string{{"kb"}, {"ki", "kc"}}
	}
	for _, keys := range keysets {
		for _, how := range []string{"inner", "left", "right", "outer", "semi", "anti"} {
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
				what := fmt.Sprintf("keys %v %s %s", keys, how, strat)
				t0 := time.Now()
				cpu, err := m.Compute()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				t1 := time.Now()
				g, err := m.Compute(gpuarray.OnGPU())
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				cpuTime, gpuTime = cpuTime+t1.Sub(t0), gpuTime+time.Since(t1)
				sameFrames(t, what, g, cpu, 0)
				p := g.Path()
				if !strings.Contains(p, "device hash join on gpu") {
					t.Fatalf("%s: path %q", what, p)
				}
				if keys[0] == "kb" && how == "right" && strat == "shuffle" && !strings.Contains(p, "laid out in key order on the host") {
					t.Fatalf("%s: a build key on more rows than the device orders, path %q", what, p)
				}
			}
		}
		t.Logf("keys %v, 18 merges: CPU %.3f s, GPU %.3f s", keys, cpuTime.Seconds(), gpuTime.Seconds())
		cpuTime, gpuTime = 0, 0
	}
}

// TestGPUMergeGathersOnDevice merges sides persisted on the GPU (int32, int64 and
// categorical keys, string, float64 and datetime columns, no nulls) with OnGPU: inner, left,
// semi and anti merges, broadcast and shuffled, gather their output columns on the device
// (Path says so, and the result's columns are held on the GPU, the right side's unmatched
// rows of a left join null there) and equal the CPU's merge of the same sides row for row.
func TestGPUMergeGathersOnDevice(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(33, 13))
	l := gatherSide(r, 30000, 3, 400, "lv")
	rt := gatherSide(r, 7000, 2, 400, "rv")
	lg, rg := l.Persist(gpuarray.OnGPU()), rt.Persist(gpuarray.OnGPU())
	if lg.Err() != nil || rg.Err() != nil {
		t.Fatal(lg.Err(), rg.Err())
	}
	for _, keys := range [][]string{{"k32"}, {"kc"}, {"k64", "k32"}} {
		for _, how := range []string{"inner", "left", "semi", "anti"} {
			for _, bc := range []int{0, DefaultBroadcastRows} {
				what := fmt.Sprintf("keys %v %s broadcast %d", keys, how, bc)
				cpu, err := Merge(l, rt, On(keys...), How(how), BroadcastRows(bc)).Compute()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				g, err := Merge(lg, rg, On(keys...), How(how), BroadcastRows(bc)).Compute(gpuarray.OnGPU())
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if n, _ := cpu.Len(); n > 0 && (!strings.Contains(g.Path(), "for the output columns' gather there") || !strings.HasPrefix(g.Where(), "gpu")) {
					t.Fatalf("%s: held on %q, path %q", what, g.Where(), g.Path())
				}
				sameFrames(t, what, g, cpu, 0)
			}
		}
	}
}
