package cluster

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// hostPartition is partitionDevice over the host's partitioning, or failing with err.
type hostPartition struct {
	err   error
	calls int
}

func (h *hostPartition) index() int { return 0 }

func (h *hostPartition) hashPartition(_ context.Context, keys [][]int64, parts int) ([]int32, error) {
	h.calls++
	if h.err != nil {
		return nil, h.err
	}
	return hashjoin.Partition(keys, parts)
}

// TestHashPartsOnGPUWorker partitions keys as a GPU worker does (over a host emulation of
// the device kernel) and as a CPU worker does: the same partitions, the GPU's when it works,
// the CPU's with the GPU's error named when it fails, and the CPU's on a worker without one.
func TestHashPartsOnGPUWorker(t *testing.T) {
	dev := &hostPartition{}
	defer func(open func() (partitionDevice, error)) { openPartitionDevice = open }(openPartitionDevice)
	openPartitionDevice = func() (partitionDevice, error) { return dev, nil }
	keys := hashjoin.Keys{make([]int64, 1000), make([]int64, 1000)}
	for i := range keys[0] {
		keys[0][i], keys[1][i] = int64(i*7919%313), int64(i%7/6)
	}
	want, err := hashjoin.Partition(keys, 7)
	if err != nil {
		t.Fatal(err)
	}
	gpu := &worker{cfg: WorkerConfig{Name: "gpu0", GPU: "emulated"}}
	cpu := &worker{cfg: WorkerConfig{Name: "cpu0"}}
	cases := []struct {
		w     *worker
		err   error
		where string
		calls int
	}{
		{gpu, nil, "hash partitioning on its GPU 0", 1},
		{gpu, errors.New("out of memory"), "hash partitioning on the CPU (its GPU: out of memory)", 1},
		{cpu, nil, "hash partitioning on the CPU (no GPU on this worker)", 0},
	}
	for _, c := range cases {
		dev.err, dev.calls = c.err, 0
		got, where, err := c.w.hashParts(context.Background(), keys, 7)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) || !strings.HasPrefix(where, c.where) || dev.calls != c.calls {
			t.Errorf("%s (device error %v): where %q, %d device calls, same partitions %v; want %q, %d calls", c.w.cfg.Name, c.err, where, dev.calls, slices.Equal(got, want), c.where, c.calls)
		}
	}
}

// hostDev stands for a chunk held in device memory: its output held aside.
type hostDev struct{ o *plan.Output }

func (h *hostDev) Bytes() uint64      { return uint64(len(h.o.Data.Bytes())) }
func (h *hostDev) Host() (any, error) { return []*plan.Output{h.o}, nil }
func (h *hostDev) Free()              {}

// TestGPUWorkerKeepsShardsOnDevice receives shards on a GPU worker (over a host emulation of
// its device memory): their pieces are kept in the device tier, those past the device limit
// spill to host memory, and the unpack joins them, from either tier, into an output partition
// kept on the device, the pieces dropped.
func TestGPUWorkerKeepsShardsOnDevice(t *testing.T) {
	defer func(up func(*plan.Output) (devValue, error)) { uploadShardPiece = up }(uploadShardPiece)
	uploads := 0
	uploadShardPiece = func(o *plan.Output) (devValue, error) {
		uploads++
		return &hostDev{o: o}, nil
	}
	const rows = 100 // 800 bytes of float64s and 100 of bools a shard
	w := &worker{cfg: WorkerConfig{Name: "gpu0", GPU: "emulated"}, store: newStore(2000, 0, t.TempDir())}
	defer w.store.close()
	var wantX []float64
	var wantOK []bool
	for in := range 3 {
		x := make([]float64, rows)
		ok := make([]bool, rows)
		for i := range x {
			x[i], ok[i] = float64(in*rows+i), i%3 != in
		}
		wantX, wantOK = append(wantX, x...), append(wantOK, ok...)
		var buf bytes.Buffer
		if err := writeShard(&buf, "shuffle-g", 0, in, []dtype.Slice{dtype.OfFloat64(x), dtype.OfBool(ok)}); err != nil {
			t.Fatal(err)
		}
		s, err := readShard(&buf, 1<<20, nil)
		if err != nil {
			t.Fatal(err)
		}
		if err := w.putShard(s, nil); err != nil {
			t.Fatal(err)
		}
	}
	tiers := map[string]int{}
	for in := range 3 {
		for c := range 2 {
			tiers[w.store.where(shardKey("shuffle-g", 0, in, c))]++
		}
	}
	if uploads != 6 || tiers[tierDevice] == 0 || tiers[tierHost] == 0 || tiers[tierDevice]+tiers[tierHost] != 6 {
		t.Fatalf("%d pieces uploaded, tiers %v: want six on the device, the oldest spilled to host memory past the 2000-byte limit", uploads, tiers)
	}
	for c, want := range []any{wantX, wantOK} {
		v, err := w.shuffleUnpack(shuffleSpec{Run: "shuffle-g", Part: 0, NIn: 3, Col: c})
		if err != nil {
			t.Fatal(err)
		}
		dv, ok := v.(devValue)
		if !ok {
			t.Fatalf("column %d: the output partition is a %T, not kept on the device", c, v)
		}
		got := dv.(*hostDev).o.Data
		if (c == 0 && !slices.Equal(got.Float64s(), want.([]float64))) || (c == 1 && !slices.Equal(got.Bools(), want.([]bool))) {
			t.Fatalf("column %d: the output partition is not the pieces joined in input order", c)
		}
	}
	if n := w.store.stats().Count; n != 0 {
		t.Fatalf("%d pieces left in the store after the unpacks", n)
	}
}
