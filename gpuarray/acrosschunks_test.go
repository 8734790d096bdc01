package gpuarray

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// acrossChunksCalls are the calls whose axis spans several chunks of x that the planning and
// GPU tests of sorts and transforms across chunks run (issue 32, item 2), along axis.
func acrossChunksCalls(x *Array, axis int) []struct {
	name string
	r    *Array
} {
	return []struct {
		name string
		r    *Array
	}{
		{"sort", Sort(x, axis)},
		{"argsort", Argsort(x, axis)},
		{"sort descending", Sort(x, axis, Descending())},
		{"argsort descending", Argsort(x, axis, Descending())},
		{"topk 5", TopK(x, 5, axis)},
		{"argtopk -7", ArgTopK(x, -7, axis)},
		{"fft", Fft(x, FFTAxis(axis))},
		{"ifft", Ifft(x, FFTAxis(axis))},
		{"rfft", Rfft(x, FFTAxis(axis))},
		// Padded by a quarter: the lengths here keep small prime factors, so the CPU's
		// reference transform stays fast (1e6+24 has the factor 125003).
		{"fft padded", Fft(x, FFTAxis(axis), FFTLen(x.n.Shape[axis]+x.n.Shape[axis]/4))},
	}
}

// TestCallsAcrossChunksPlannedOnDevice checks, without a GPU, the planning of sorts, argsorts,
// top-k and transforms whose axis spans several chunks of an array persisted on one GPU (a
// 1-d array in four chunks, and a 2-d one along its chunked axis): the call's task reads one
// block joined on the device from the chunks (plan.HeldJoin, pieces at the chunks' addresses:
// the chunks gathered device to device, as checkJoin checks), nothing from host memory, and
// the output stays on the device (planCallKeep) in the stated chunking, one chunk along the
// axis (the other axes keep theirs); Path names no host step. A stage chained after the call
// reads its kept output in place.
func TestCallsAcrossChunksPlannedOnDevice(t *testing.T) {
	dev := &cuda.Device{Info: cuda.DeviceInfo{Index: 0}}
	rs := NewRandomState(32)
	x1, g1 := heldForPlanning(t, rs.StandardNormal(Shape(1000), Chunks(250)), dev, false)
	x2, g2 := heldForPlanning(t, rs.StandardNormal(Shape(120, 30), Chunks(40, 15)), dev, false)
	for _, in := range []struct {
		x    *Array
		g    *gpuChunks
		axis int
	}{{x1, g1, 0}, {x2, g2, 0}} {
		for _, c := range acrossChunksCalls(in.x, in.axis) {
			what := fmt.Sprintf("%s of %s along %d", c.name, expr.ShapeString(in.x.n.Shape), in.axis)
			if err := c.r.Err(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			n := firstCall(c.r.n)
			st, err := plan.Lower(0, n, map[*expr.Node]dtype.Slice{}, plan.Options{Held: heldOn(dev), LateGather: true, HeldOperands: true})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			s := &gpuSched{devs: []*cuda.Device{dev}}
			s.planSteps(st, time.Now())
			if len(s.host) != 0 {
				t.Errorf("%s: Path names host steps %q", what, s.host)
			}
			if slices.Contains(st.HostReads, in.x.n) {
				t.Errorf("%s: the call reads the held array from host memory", what)
			}
			joins := 0
			for _, task := range st.Tasks {
				for _, b := range task.Inputs {
					if !b.Data.IsNil() {
						t.Errorf("%s: task %d reads a block of %s from host memory", what, task.Index, expr.ShapeString(b.Shape))
					}
					if b.Held != nil && b.Held.Join != nil && heldBy(b.Held, in.g) {
						checkJoin(t, what, task.Index, &b, in.g, dev)
						joins++
					}
				}
			}
			if joins != len(st.Tasks) || joins == 0 {
				t.Errorf("%s: %d of %d tasks read a block joined on the device", what, joins, len(st.Tasks))
			}
			if keep, why := planCallKeep(n, st); !keep {
				t.Errorf("%s: the output is not kept on the device: %s", what, why)
			}
			if len(n.Chunks[in.axis]) != 1 {
				t.Errorf("%s: the output has chunks %v along the axis, want one", what, n.Chunks[in.axis])
			}
			for ax := range n.Chunks {
				if ax != in.axis && !slices.Equal(n.Chunks[ax], in.x.n.Chunks[ax]) {
					t.Errorf("%s: the output's chunks along axis %d are %v, not the input's %v", what, ax, n.Chunks[ax], in.x.n.Chunks[ax])
				}
			}
			// The stage after the call (abs, then a sum) reads the kept output in place.
			kept, err := expr.NewBuffered(fakeHeld{}, n.Shape, n.Chunks)
			if err != nil {
				t.Fatal(err)
			}
			kept.DType = n.DType
			opt := gpuPlanOptions()
			opt.Kept = map[*expr.Node]*expr.Node{n: kept}
			after := c.r.Abs().Sum()
			next, err := plan.Lower(1, after.n.Args[0], map[*expr.Node]dtype.Slice{}, opt)
			if err != nil {
				t.Fatalf("%s, then abs and sum: %v", what, err)
			}
			held := 0
			for _, task := range next.Tasks {
				for _, b := range task.Inputs {
					if !b.Data.IsNil() {
						t.Errorf("%s, then abs and sum: task %d reads a block from host memory", what, task.Index)
					}
					if b.Held != nil {
						held++
					}
				}
			}
			if held == 0 {
				t.Errorf("%s, then abs and sum: no task reads the kept output in place", what)
			}
		}
	}
}

// TestCallsAcrossGPUsNamedInPath: a sort or transform whose axis spans chunks persisted on two
// GPUs (Persist deals row chunks among them) has no device join today (plan.HeldJoin joins
// chunks of one GPU; a join over peer copies is not written): its call reads the array's
// host copy, and Path names that host read, so the cross-GPU step is never silent.
func TestCallsAcrossGPUsNamedInPath(t *testing.T) {
	devs := []*cuda.Device{{Info: cuda.DeviceInfo{Index: 0}}, {Info: cuda.DeviceInfo{Index: 1}}}
	x, g := heldForPlanning(t, NewRandomState(33).StandardNormal(Shape(1000), Chunks(250)), devs[0], false)
	for i := range g.devs {
		g.devs[i] = devs[i%2]
	}
	for _, c := range acrossChunksCalls(x, 0)[:7] {
		n := firstCall(c.r.n)
		st, err := plan.Lower(0, n, map[*expr.Node]dtype.Slice{}, plan.Options{Held: heldOn(devs...), LateGather: true, HeldOperands: true})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s := &gpuSched{devs: devs}
		s.planSteps(st, time.Now())
		if !slices.Contains(st.HostReads, x.n) {
			t.Errorf("%s across two GPUs: the call reads the array in place (a cross-GPU join this test should then check)", c.name)
			continue
		}
		if !slices.ContainsFunc(s.host, func(h string) bool { return strings.HasPrefix(h, "host read:") }) {
			t.Errorf("%s across two GPUs: the host read is not named in Path (host steps %q)", c.name, s.host)
		}
	}
}

// TestCallsAcrossGPUsJoinedWithPeerCopies: with peer copies on (GPUNOTES_PEER_COPY=1), a sort
// or transform whose axis spans chunks persisted on two GPUs reads one block joined from them
// (crossJoinedBlock), planned on the GPU holding most of its elements, its pieces the chunks at
// their own GPUs' addresses (checkJoin), and splitByDevice sees it as a task whose chunks of
// another GPU are to be copied there (joinsAcross; gather copies them peer to peer, which needs
// GPUs); no host read is planned. A fused kernel (not a call) reading such a box is not joined
// across GPUs: it reads the host copy, and Path says so.
func TestCallsAcrossGPUsJoinedWithPeerCopies(t *testing.T) {
	was := peerCopy
	peerCopy = true
	defer func() { peerCopy = was }()
	devs := []*cuda.Device{{Info: cuda.DeviceInfo{Index: 0}}, {Info: cuda.DeviceInfo{Index: 1}}}
	for _, deal := range [][]int{{0, 1, 0, 1}, {1, 0, 1, 1}} {
		x, g := heldForPlanning(t, NewRandomState(34).StandardNormal(Shape(1000), Chunks(250)), devs[0], false)
		held := map[int]int{}
		for i := range g.devs {
			g.devs[i] = devs[deal[i]]
			held[deal[i]]++
		}
		want := devs[0]
		if held[1] > held[0] {
			want = devs[1]
		}
		for _, c := range acrossChunksCalls(x, 0) {
			what := fmt.Sprintf("%s of chunks on gpus %v", c.name, deal)
			n := firstCall(c.r.n)
			s := &gpuSched{devs: devs}
			st, err := plan.Lower(0, n, map[*expr.Node]dtype.Slice{}, plan.Options{Held: s.held(), LateGather: true, HeldOperands: true})
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			s.planSteps(st, time.Now())
			if slices.Contains(st.HostReads, x.n) || len(s.host) != 0 {
				t.Errorf("%s: a host read is planned (host steps %q)", what, s.host)
			}
			joins := 0
			for _, task := range st.Tasks {
				for _, b := range task.Inputs {
					if b.Held == nil || b.Held.Join == nil {
						continue
					}
					checkJoin(t, what, task.Index, &b, g, want)
					if !s.joinsAcross(&b) {
						t.Errorf("%s: splitByDevice would not copy the other GPU's chunks of task %d", what, task.Index)
					}
					joins++
				}
			}
			if joins != 1 {
				t.Errorf("%s: %d blocks joined across GPUs, want 1", what, joins)
			}
			if keep, why := planCallKeep(n, st); !keep {
				t.Errorf("%s: the output is not kept on the device: %s", what, why)
			}
		}
		// A fused kernel reading the same box: no join across GPUs, a host read named in Path.
		r := x.Rechunk(1000).Add(1)
		s := &gpuSched{devs: devs}
		st, err := plan.Lower(0, r.n, map[*expr.Node]dtype.Slice{}, plan.Options{Held: s.held(), LateGather: true, HeldOperands: true})
		if err != nil {
			t.Fatal(err)
		}
		s.planSteps(st, time.Now())
		if !slices.Contains(st.HostReads, x.n) || !slices.ContainsFunc(s.host, func(h string) bool { return strings.HasPrefix(h, "host read:") }) {
			t.Errorf("x.Rechunk(1000) + 1 of chunks on gpus %v: host reads %v, host steps %q; want a named host read", deal, st.HostReads, s.host)
		}
	}
}
