package dataframe

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/gpunotes/gpunotes/dataframe/hashjoin"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// Merge on a GPU. When a merge computes with OnGPU, its hash join runs on the device
// (gpuarray.HashJoin, HashPartition): the same strategies as the host's (broadcast, aligned,
// shuffle) and the same steps, each a device call that gives what dataframe/hashjoin gives
// (the same partitions, the same pairs in the same order), so the result is equal to the
// CPU's bit for bit. The sides' columns come to the host first (as for the host join), the key
// codes are encoded there (strings and categoricals through one dictionary of both sides) and
// the output columns gathered there at the joined rows: Path says so, with a warning, as it
// names a build side whose rows of a long key run the host laid out (gpuarray.JoinPairs'
// HostNote).

// hashJoinDevice and hashPartitionDevice are the device calls (variables so that tests without
// a GPU can run the rest of the path over host emulations of them).
var (
	hashJoinDevice      = gpuarray.HashJoin
	hashPartitionDevice = gpuarray.HashPartition
)

// mergeDeviceOpts returns the options a device merge computes with: rc's when they name a
// GPU; ok is false otherwise (a variable for the same tests).
var mergeDeviceOpts = func(rc *runCtx) ([]gpuarray.ComputeOption, bool) {
	return rc.opts, rc.target.Backend == "gpu"
}

// deviceJoin is the GPU's joinEngine.
type deviceJoin struct {
	opts []gpuarray.ComputeOption

	mu        sync.Mutex
	notes     []string // the device calls' notes, once each
	hostNotes []string // the steps of device calls that ran on the host, once each
}

// newDeviceJoin returns the device engine of a merge when rc computes on a GPU.
func newDeviceJoin(rc *runCtx) (*deviceJoin, bool) {
	opts, ok := mergeDeviceOpts(rc)
	if !ok {
		return nil, false
	}
	return &deviceJoin{opts: opts}, true
}

// mergeHostSteps names the steps of a device merge on keys that run on the host: the copy of
// the sides there, the encoding of key codes (with the dictionary of both sides where string
// or categorical keys need one), the gather of the output columns.
func mergeHostSteps(keys []keyPair) string {
	var dict []string
	for _, k := range keys {
		l, r := k.l.DType, k.r.DType
		switch {
		case l == String || r == String:
			dict = append(dict, fmt.Sprintf("%q (strings)", k.l.Name))
		case l == Category && r == Category:
			// Categoricals: codes of the one dictionary both sides share, or of a dictionary
			// unified over the two.
			dict = append(dict, fmt.Sprintf("%q (categoricals)", k.l.Name))
		}
	}
	s := "sides copied to the host, key codes encoded there"
	if len(dict) > 0 {
		s += " (one dictionary of both sides for " + strings.Join(dict, ", ") + ")"
	}
	return s + ", output columns gathered there at the joined rows"
}

// note records a device call's note n, and the step it ran on the host (host, when not "").
func (e *deviceJoin) note(n, host string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !slices.Contains(e.notes, n) {
		e.notes = append(e.notes, n)
	}
	if host != "" && !slices.Contains(e.hostNotes, host) {
		e.hostNotes = append(e.hostNotes, host)
	}
}

// record writes the merge's notes into rc's Path: the device join (with its strategy) and the
// host steps (a warning).
func (e *deviceJoin) record(rc *runCtx, strategy string, keys []keyPair) {
	e.mu.Lock()
	defer e.mu.Unlock()
	what := "no device call (nothing to join)"
	if len(e.notes) > 0 {
		what = strings.Join(e.notes, ", ")
	}
	rc.device(fmt.Sprintf("merge: %s, %s; sides computed on %s", what, strategy, rc.target.Backend))
	rc.host("merge: %s (the join on the GPU)", mergeHostSteps(keys))
	for _, h := range e.hostNotes {
		rc.host("merge: %s", h)
	}
}

func (e *deviceJoin) partition(k hashjoin.Keys, n int) ([]int32, error) {
	part, note, err := hashPartitionDevice(k, n, e.opts...)
	if err != nil {
		return nil, err
	}
	e.note(note, "")
	return part, nil
}

// probe runs one device join, noting it.
func (e *deviceJoin) probe(build, probe hashjoin.Keys, mode gpuarray.JoinMode, part int) (*gpuarray.JoinPairs, error) {
	r, note, err := hashJoinDevice(build, probe, mode, part, e.opts...)
	if err != nil {
		return nil, err
	}
	e.note(note, r.HostNote)
	return r, nil
}

// join is hashjoin.Join on the device: build on the side whose order does not lead (the
// right one but for right joins), probe with the other, so that the pairs come in
// hashjoin.Join's order; outer joins add the right rows no left row matched, in order.
func (e *deviceJoin) join(p int, l, r hashjoin.Keys, how hashjoin.How) ([]int32, []int32, error) {
	build, probe, mode := r, l, gpuarray.JoinKeep
	switch how {
	case hashjoin.Inner:
		mode = gpuarray.JoinInner
	case hashjoin.Semi:
		mode = gpuarray.JoinSemi
	case hashjoin.Anti:
		mode = gpuarray.JoinAnti
	case hashjoin.Right:
		build, probe = l, r
	case hashjoin.Left, hashjoin.Outer:
	default:
		return nil, nil, fmt.Errorf("device join: %v", how)
	}
	res, err := e.probe(build, probe, mode, p)
	if err != nil {
		return nil, nil, fmt.Errorf("partition %d: %w", p, err)
	}
	switch how {
	case hashjoin.Semi, hashjoin.Anti:
		return res.Probe, nil, nil
	case hashjoin.Right:
		return res.Build, res.Probe, nil
	case hashjoin.Outer:
		li, ri := res.Probe, res.Build
		for j, m := range res.Matched {
			if !m {
				li, ri = append(li, -1), append(ri, int32(j))
			}
		}
		return li, ri, nil
	}
	return res.Probe, res.Build, nil
}

// broadcast is broadcastJoin on the device: one probe of the whole big side against the small
// one, its pairs (in probe row order) split at the big side's partitions.
func (e *deviceJoin) broadcast(big, small hashjoin.Keys, lens []int, how hashjoin.How, swapped bool) ([]pairs, error) {
	mode := gpuarray.JoinInner
	switch how {
	case hashjoin.Semi:
		mode = gpuarray.JoinSemi
	case hashjoin.Anti:
		mode = gpuarray.JoinAnti
	case hashjoin.Left, hashjoin.Right:
		mode = gpuarray.JoinKeep
	}
	res, err := e.probe(small, big, mode, 0)
	if err != nil {
		return nil, err
	}
	out := make([]pairs, len(lens))
	at, end := 0, 0
	for p, n := range lens {
		end += n
		from := at
		for at < len(res.Probe) && int(res.Probe[at]) < end {
			at++
		}
		pi := res.Probe[from:at:at]
		switch {
		case how == hashjoin.Semi:
			out[p] = pairs{l: pi}
		case how == hashjoin.Anti:
			r := make([]int32, len(pi))
			for i := range r {
				r[i] = -1
			}
			out[p] = pairs{l: pi, r: r}
		case swapped:
			out[p] = pairs{l: res.Build[from:at:at], r: pi}
		default:
			out[p] = pairs{l: pi, r: res.Build[from:at:at]}
		}
	}
	return out, nil
}
