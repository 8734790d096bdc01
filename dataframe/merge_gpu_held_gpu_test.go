package dataframe

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestGPUMergeHeldJoin merges sides persisted on the GPU (int32, int64 and categorical keys,
// the categories differing by side, and two keys together) with GPUNOTES_GPU_JOIN=device:
// inner, left, semi and anti merges, broadcast, shuffled into hash partitions and aligned,
// join on the keys where they are held (Path says so), keep every output column on the GPU
// (the right side's unmatched rows of a left merge null there) and equal the CPU's merge of
// the same sides row for row.
func TestGPUMergeHeldJoin(t *testing.T) {
	needGPU(t)
	saved := heldJoinOn
	heldJoinOn = true
	defer func() { heldJoinOn = saved }()
	r := rand.New(rand.NewPCG(33, 43))
	l := gatherSide(r, 30000, 3, 400, "lv")
	rt := gatherSide(r, 7000, 2, 400, "rv")
	for _, keys := range [][]string{{"k32"}, {"k64"}, {"kc"}, {"k64", "k32"}} {
		lg, rg := l.Persist(gpuarray.OnGPU()), rt.Persist(gpuarray.OnGPU())
		if lg.Err() != nil || rg.Err() != nil {
			t.Fatal(lg.Err(), rg.Err())
		}
		// Aligned: both sides shuffled on the keys into 4 partitions (on the GPU for the
		// persisted sides).
		sides, held := map[string][2]*Frame{}, map[string][2]*Frame{}
		for _, s := range []string{"broadcast", "shuffle", "aligned"} {
			sides[s], held[s] = [2]*Frame{l, rt}, [2]*Frame{lg, rg}
		}
		shuffle := func(f *Frame, opts ...ComputeOption) *Frame {
			s, err := f.Shuffle(keys, 4, opts...)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		sides["aligned"] = [2]*Frame{shuffle(l), shuffle(rt)}
		held["aligned"] = [2]*Frame{shuffle(lg, gpuarray.OnGPU()), shuffle(rg, gpuarray.OnGPU())}
		for _, how := range []string{"inner", "left", "semi", "anti"} {
			for _, strat := range []string{"broadcast", "shuffle", "aligned"} {
				bc := 0
				if strat == "broadcast" {
					bc = DefaultBroadcastRows
				}
				a, b := sides[strat][0], sides[strat][1]
				what := fmt.Sprintf("keys %v %s %s", keys, how, strat)
				cpu, err := Merge(a, b, On(keys...), How(how), BroadcastRows(bc)).Compute()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				g, err := Merge(held[strat][0], held[strat][1], On(keys...), How(how), BroadcastRows(bc)).Compute(gpuarray.OnGPU())
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				p := g.Path()
				if !strings.Contains(p, "key codes encoded on the GPU") || strings.Contains(p, "not taken") || !strings.HasPrefix(g.Where(), "gpu") {
					t.Fatalf("%s: held on %q, path %q", what, g.Where(), p)
				}
				if strat == "aligned" && !strings.Contains(p, "no shuffle") {
					t.Fatalf("%s: path %q", what, p)
				}
				if keys[0] == "kc" && !strings.Contains(p, "one dictionary of both sides built on the host") {
					t.Fatalf("%s: path %q", what, p)
				}
				sameFrames(t, what, g, cpu, 0)
			}
		}
	}
}
