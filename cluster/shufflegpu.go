package cluster

import (
	"context"
	"fmt"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
)

// partitionDevice is what a GPU worker's shuffle needs of its GPU: the hash partitioning
// kernel (gpuarray/cuda's HashPartition, which gpuarray.HashPartition runs in a notebook). A
// variable (openPartitionDevice) so that tests without a GPU run the path over the host's
// partitioning.
type partitionDevice interface {
	index() int
	hashPartition(ctx context.Context, keys [][]int64, parts int) ([]int32, error)
}

var openPartitionDevice = func() (partitionDevice, error) {
	d, err := cuda.Open(0)
	if err != nil {
		return nil, err
	}
	return cudaPartition{d}, nil
}

type cudaPartition struct{ d *cuda.Device }

func (c cudaPartition) index() int { return c.d.Info.Index }

func (c cudaPartition) hashPartition(ctx context.Context, keys [][]int64, parts int) ([]int32, error) {
	return c.d.HashPartition(ctx, keys, parts)
}

// hashParts returns each row's output partition by the hash of its encoded keys (shuffleKeys):
// on this worker's GPU when it has one (the same partitions as the host's), else, or when the
// GPU fails, with hashjoin.Partition on the CPU. where says which, for Path.
func (w *worker) hashParts(ctx context.Context, k hashjoin.Keys, n int) (parts []int32, where string, err error) {
	why := "no GPU on this worker"
	if w.cfg.GPU != "" {
		d, err := openPartitionDevice()
		if err == nil {
			var p []int32
			if p, err = d.hashPartition(ctx, k, n); err == nil {
				return p, fmt.Sprintf("hash partitioning on its GPU %d (the keys encoded on the host and copied there; the rows gathered on the host for the wire)", d.index()), nil
			}
		}
		why = fmt.Sprintf("its GPU: %v", err)
	}
	p, err := hashjoin.Partition(k, n)
	if err != nil {
		return nil, "", err
	}
	return p, "hash partitioning on the CPU (" + why + ")", nil
}

// workerName names the worker holding f's result ("a worker" when it has none now).
func (f *Future) workerName() string {
	mu := f.c.s.locker()
	mu.Lock()
	defer mu.Unlock()
	if w := f.t.worker; w != nil {
		return w.info.Name
	}
	return "a worker"
}
