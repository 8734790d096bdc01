package cuda

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
)

// TestGPUHashJoinMatchesHashjoin runs the hash join kernels on the GPU and compares them with
// dataframe/hashjoin: for every probe mode, keys of one column and with a null flag, the same
// pairs in the same order and the same matched build rows; the partitions equal hashjoin's;
// a build key on more than MaxJoinRun rows (laid out on the host) too. It logs the times of both for
// the largest case (the device's with the keys' upload and the pairs' download).
func TestGPUHashJoinMatchesHashjoin(t *testing.T) {
	d := gpu(t)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(33, 4))
	for _, c := range []struct {
		nb, np, distinct int
		flag             bool
	}{{1 << 20, 1 << 22, 1 << 19, false}, {1 << 16, 1 << 20, 1 << 12, true}, {1, 1000, 1, false}, {0, 100, 1, false}, {5000, 0, 100, false}} {
		build := joinCase(r, max(c.nb, 1), c.distinct, c.flag, 0)
		probe := joinCase(r, max(c.np, 1), c.distinct, c.flag, int64(c.distinct/5))
		if c.nb == 0 {
			for i := range build {
				build[i] = build[i][:0]
			}
		}
		if c.np == 0 {
			for i := range probe {
				probe[i] = probe[i][:0]
			}
		}
		tab, err := hashjoin.Build(build)
		if err != nil && c.nb > 0 {
			t.Fatal(err)
		}
		for _, mode := range []JoinMode{JoinInner, JoinKeep, JoinSemi, JoinAnti} {
			t0 := time.Now()
			got, err := d.HashJoin(ctx, build, probe, mode)
			if err != nil {
				t.Fatalf("%+v mode %d: %v", c, mode, err)
			}
			dt := time.Since(t0)
			if c.nb == 0 {
				want := len(probe[0])
				if mode == JoinInner || mode == JoinSemi {
					want = 0
				}
				if len(got.Probe) != want {
					t.Errorf("%+v mode %d: %d rows against an empty build side, want %d", c, mode, len(got.Probe), want)
				}
				continue
			}
			t1 := time.Now()
			if mode >= JoinSemi {
				in, err := tab.Contains(probe)
				if err != nil {
					t.Fatal(err)
				}
				want := []int32{}
				for i, ok := range in {
					if ok == (mode == JoinSemi) {
						want = append(want, int32(i))
					}
				}
				if !slices.Equal(got.Probe, want) {
					t.Errorf("%+v mode %d: %d rows, want %d (or another order)", c, mode, len(got.Probe), len(want))
				}
				continue
			}
			pi, bi, matched, err := tab.Probe(probe, mode == JoinKeep)
			if err != nil {
				t.Fatal(err)
			}
			if c.nb == 1<<20 {
				t.Logf("%d probe rows against %d build rows, mode %d: %d pairs; GPU %.4f s (with transfers), hashjoin probe %.4f s", c.np, c.nb, mode, len(pi), dt.Seconds(), time.Since(t1).Seconds())
			}
			if !slices.Equal(got.Probe, pi) || !slices.Equal(got.Build, bi) {
				t.Errorf("%+v mode %d: %d pairs, hashjoin %d (or another order)", c, mode, len(got.Probe), len(pi))
			}
			if !slices.Equal(got.Matched, matched) {
				t.Errorf("%+v mode %d: matched build rows differ", c, mode)
			}
		}
		if c.np > 0 {
			for _, parts := range []int{1, 7, 64} {
				want, err := hashjoin.Partition(probe, parts)
				if err != nil {
					t.Fatal(err)
				}
				got, err := d.HashPartition(ctx, probe, parts)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, want) {
					t.Errorf("%+v: %d partitions differ from hashjoin's", c, parts)
				}
			}
		}
	}
	// A key on more build rows than JoinOrder sorts (nulls, say): the host lays them out.
	heavy := [][]int64{make([]int64, 3*MaxJoinRun+3), make([]int64, 3*MaxJoinRun+3)}
	for i := range heavy[0] {
		if i%3 != 0 {
			heavy[0][i], heavy[1][i] = int64(i), 0
		} else {
			heavy[1][i] = 1
		}
	}
	probe := [][]int64{{0, 3, 0, 7}, {1, 0, 0, 1}}
	got, err := d.HashJoin(ctx, heavy, probe, JoinKeep)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := hashjoin.Build(heavy)
	if err != nil {
		t.Fatal(err)
	}
	pi, bi, _, err := tab.Probe(probe, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.HostOrdered != MaxJoinRun+1 || !slices.Equal(got.Probe, pi) || !slices.Equal(got.Build, bi) {
		t.Errorf("a key on %d build rows: longest run %d, %d pairs, hashjoin %d (or another order)", MaxJoinRun+1, got.HostOrdered, len(got.Probe), len(pi))
	}
}
