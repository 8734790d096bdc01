package dataframe

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestGPUMergeMatchesCPU runs merges with OnGPU (the device hash join) and compares them with
// the CPU's row for row: every join kind, every key type alone and two keys together,
// broadcast, shuffled and aligned; Path names the device join.
func TestGPUMergeMatchesCPU(t *testing.T) {
	needGPU(t)
	r := rand.New(rand.NewPCG(33, 5))
	l := mergeSide(r, 30000, 4, 2000, "lv")
	rt := mergeSide(r, 5000, 3, 2000, "rv")
	for _, keys := range [][]string{{"ki"}, {"kt"}, {"kc"}, {"ks"}, {"kf"}, {"ki", "kc"}} {
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
				cpu, err := m.Compute()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				g, err := m.Compute(gpuarray.OnGPU())
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				sameFrames(t, what, g, cpu, 0)
				// A build key on more rows than the device orders (a categorical of few
				// categories) is joined on the host, which Path names instead.
				if p := g.Path(); !strings.Contains(p, "device hash join on gpu") && !strings.Contains(p, "joins ran on the host") {
					t.Fatalf("%s: path %q", what, p)
				}
			}
		}
	}
}
