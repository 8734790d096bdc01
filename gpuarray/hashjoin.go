package gpuarray

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
)

// JoinMode is what HashJoin emits for each probe row.
type JoinMode int

// The modes of HashJoin.
const (
	// JoinInner emits a pair per build row of the probe row's key.
	JoinInner = JoinMode(cuda.JoinInner)
	// JoinKeep also emits (row, -1) for a probe row whose key no build row has.
	JoinKeep = JoinMode(cuda.JoinKeep)
	// JoinSemi emits the probe rows whose key a build row has.
	JoinSemi = JoinMode(cuda.JoinSemi)
	// JoinAnti emits the probe rows whose key no build row has.
	JoinAnti = JoinMode(cuda.JoinAnti)
)

// JoinPairs is HashJoin's output: Probe[k] and Build[k] are the rows of output row k, Build
// -1 for an unmatched probe row that JoinKeep keeps (Build nil for JoinSemi and JoinAnti);
// Matched says which build rows a probe row matched (JoinInner and JoinKeep). HostNote, when
// not "", names a step that ran on the host (the layout of a build side with a key on more
// rows than the device orders, cuda.MaxJoinRun).
type JoinPairs struct {
	Probe, Build []int32
	Matched      []bool
	HostNote     string
}

// joinDevice returns the GPU of opts' scheduler that part goes to (parts spread round the
// GPUs).
func joinDevice(what string, part int, opts []ComputeOption) (*cuda.Device, *gpuSched, computeConfig, error) {
	cfg, err := configure(opts)
	if err != nil {
		return nil, nil, cfg, err
	}
	s, ok := cfg.sched.(*gpuSched)
	if !ok || len(s.devs) == 0 {
		return nil, nil, cfg, fmt.Errorf("%s: needs a GPU scheduler (OnGPU)", what)
	}
	return s.devs[max(part, 0)%len(s.devs)], s, cfg, nil
}

// HashJoin is plumbing for package dataframe's Merge on a GPU: it joins probe's rows against
// build's on a GPU of opts (OnGPU; part picks one of several, round robin) with the device
// hash join kernels, and returns the pairs and a note for Path. Keys are columns of int64
// codes, both sides encoded alike (a null flag as a column of its own, so nulls match nulls);
// build and probe have the same number of columns. The pairs come in probe row order, each
// probe row's build rows in row order, as dataframe/hashjoin's Probe gives them.
func HashJoin(build, probe [][]int64, mode JoinMode, part int, opts ...ComputeOption) (*JoinPairs, string, error) {
	if mode < JoinInner || mode > JoinAnti {
		return nil, "", fmt.Errorf("HashJoin: mode %d", mode)
	}
	d, _, cfg, err := joinDevice("HashJoin", part, opts)
	if err != nil {
		return nil, "", err
	}
	r, err := d.HashJoin(cfg.ctx, build, probe, cuda.JoinMode(mode))
	if err != nil {
		return nil, "", fmt.Errorf("HashJoin: %w", err)
	}
	note := fmt.Sprintf("device hash join on gpu %d (atom.cas table, ordered probe)", d.Info.Index)
	p := &JoinPairs{Probe: r.Probe, Build: r.Build, Matched: r.Matched}
	if r.HostOrdered > 0 {
		p.HostNote = fmt.Sprintf("build rows laid out in key order on the host (a key on %d rows, more than the %d the device orders)", r.HostOrdered, cuda.MaxJoinRun)
	}
	return p, note, nil
}

// HashPartition is plumbing for package dataframe's shuffles on a GPU: every row's partition
// in [0, parts) by its key's hash, computed on a GPU of opts, the same partition as
// dataframe/hashjoin's Partition gives (keys as for HashJoin).
func HashPartition(keys [][]int64, parts int, opts ...ComputeOption) ([]int32, string, error) {
	d, _, cfg, err := joinDevice("HashPartition", 0, opts)
	if err != nil {
		return nil, "", err
	}
	out, err := d.HashPartition(cfg.ctx, keys, parts)
	if err != nil {
		return nil, "", fmt.Errorf("HashPartition: %w", err)
	}
	return out, fmt.Sprintf("hash partitioning on gpu %d", d.Info.Index), nil
}
