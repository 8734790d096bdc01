package cluster_test

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestGPUWorkerShuffleHashPartitionsOnGPU shuffles a frame persisted on a GPU worker (its
// chunks in device memory) on an integer key, a string key (hashed in this process) and both:
// the worker hash-partitions every input partition on its GPU with the hash partitioning
// kernel, Path says so, the result equals the shuffle in this process, partition by
// partition, and its partitions are kept in the worker's device memory.
func TestGPUWorkerShuffleHashPartitionsOnGPU(t *testing.T) {
	needGPU(t)
	c := newGPUCluster(t, cluster.Options{})
	pf := keyedFrame(200_000, 6131, 8).Persist(gpuarray.On(c))
	if err := pf.Err(); err != nil {
		t.Fatal(err)
	}
	for _, on := range [][]string{{"k"}, {"s"}, {"s", "k"}} {
		t.Run(strings.Join(on, ","), func(t *testing.T) {
			checkFrameShuffle(t, c, pf, on, "input partitions, hash partitioning on its GPU")
		})
	}
	// The output partitions stay in the worker's device memory, as persisted chunks do.
	got, err := pf.Shuffle([]string{"k"}, 6, gpuarray.On(c))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"k", "x"} {
		a, err := got.Array(name)
		if err != nil {
			t.Fatal(err)
		}
		ks := gpuarray.KeptChunks(a, c)
		if len(ks) == 0 {
			t.Fatalf("column %s is not kept on the cluster after the shuffle", name)
		}
		for i, k := range ks {
			if tier := k.(interface{ Tier() string }).Tier(); tier != "device" {
				t.Errorf("column %s, partition %d: kept in %q, not in device memory", name, i, tier)
			}
		}
	}
}
