package gpuarray

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// heldBase is where heldForPlanning's made-up device addresses start.
const heldBase = 0x7f00_0000_0000

// heldArrays counts heldForPlanning's arrays, each at its own made-up addresses.
var heldArrays uint64

// heldForPlanning returns x (computed on the CPU) as an array persisted on dev is, for
// planning only: chunk i at the made-up device address heldBase + a<<32 + i<<24 (array a),
// which nothing reads
// (the tests lower stages with the GPU's hook and run none on a device), its values in host
// memory as a persisted array's host copy is. narrow holds float32 values in 4 bytes, as
// Persist does.
func heldForPlanning(t *testing.T, x *Array, dev *cuda.Device, narrow bool) (*Array, *gpuChunks) {
	t.Helper()
	c, err := x.Compute(Inline())
	if err != nil {
		t.Fatal(err)
	}
	vals, err := c.n.Values()
	if err != nil {
		t.Fatal(err)
	}
	n := c.n
	g := &gpuChunks{grid: newChunkGrid(n.Shape, n.Chunks), dt: n.DType, narrow: narrow, host: vals}
	g.idle.L = &g.mu
	total := expr.NumChunks(n.Chunks)
	idx := make([]int, len(n.Shape))
	for i := range total {
		off := make([]int, len(idx))
		for ax, j := range idx {
			off[ax] = g.grid.bounds[ax][j]
		}
		g.offs = append(g.offs, off)
		g.devs = append(g.devs, dev)
		g.ptrs = append(g.ptrs, driver.DevicePtr(heldBase+heldArrays<<32+uint64(i)<<24))
		for ax := len(idx) - 1; ax >= 0; ax-- {
			if idx[ax]++; idx[ax] < len(n.Chunks[ax]) {
				break
			}
			idx[ax] = 0
		}
	}
	heldArrays++
	b, err := expr.NewBuffered(g, n.Shape, n.Chunks)
	if err != nil {
		t.Fatal(err)
	}
	b.DType = n.DType // as Persist sets it
	return &Array{n: b}, g
}

// heldStage is what the GPU's planning decided for one stage that reads a held array.
type heldStage struct {
	what    string // describeKernel
	call    expr.CallFn
	isCall  bool
	inPlace int  // tasks reading their block of the array where the GPU holds it
	onHost  bool // the stage reads the array from host memory (plan.Stage.HostReads)
}

// planHeld lowers r's stages as the GPU scheduler of one GPU, dev, does (heldOn, the late
// gathers) and records, for each stage reading the held array x (g), whether its tasks read
// their blocks in place and which host steps the scheduler names in Path (planSteps); each
// stage's values are computed on the CPU for the next. It checks that every held block is
// the chunk it says, at that chunk's address, narrow as g is.
func planHeld(t *testing.T, r *Array, x *Array, g *gpuChunks, dev *cuda.Device) ([]heldStage, []string) {
	t.Helper()
	s := &gpuSched{devs: []*cuda.Device{dev}}
	cfg, err := configure([]ComputeOption{Inline()})
	if err != nil {
		t.Fatal(err)
	}
	var stages []heldStage
	done := map[*expr.Node]dtype.Slice{}
	for id, n := range stageOrder([]*expr.Node{r.n}) {
		st, err := plan.Lower(id, n, done, plan.Options{Held: heldOn(dev), LateGather: true, HeldOperands: true})
		if err != nil {
			t.Fatal(err)
		}
		s.planSteps(st, time.Now())
		hs := heldStage{what: describeKernel(st.Kernel), onHost: slices.Contains(st.HostReads, x.n) || slices.Contains(st.HostOperands, x.n)}
		if c := st.Kernel.Call; c != nil {
			hs.call, hs.isCall = c.Fn, true
		}
		for _, task := range st.Tasks {
			for _, b := range task.Inputs {
				if b.Held == nil || !heldBy(b.Held, g) {
					continue // another held array's block
				}
				if b.Held.Join != nil {
					checkJoin(t, hs.what, task.Index, &b, g, dev)
					hs.inPlace++
					continue
				}
				i, origin, shape := g.grid.within(b.Origin, lastOf(b.Origin, b.Shape))
				if i < 0 || !slices.Equal(origin, b.Origin) || !slices.Equal(shape, b.Shape) ||
					b.Held.Ptr != uintptr(g.ptrs[i]) || b.Held.Narrow != g.narrow || b.Held.Device != dev.Info.Index {
					t.Fatalf("%s: task %d reads held block %+v at %v of shape %v, not chunk %d of the array", hs.what, task.Index, *b.Held, b.Origin, b.Shape, i)
				}
				hs.inPlace++
			}
		}
		if hs.inPlace > 0 || hs.onHost {
			stages = append(stages, hs)
		}
		if done[n], err = runStage(cfg, id, n, done, func(int) {}); err != nil {
			t.Fatal(err)
		}
	}
	return stages, s.host
}

// heldBy reports whether a held block reads g's chunks (by their made-up addresses).
func heldBy(h *plan.Held, g *gpuChunks) bool {
	lo, hi := uintptr(g.ptrs[0]), uintptr(g.ptrs[len(g.ptrs)-1])
	return h.Ptr >= lo && h.Ptr <= hi+(1<<24)
}

// checkJoin checks a held block joined from several chunks of g (plan.HeldJoin): its pieces
// are the chunks its box meets, at their addresses, narrow as g is; and the copies the device
// makes from them (plan.PieceCopies, as given and collapsed), done here on the chunks' host
// values, give the box's values.
func checkJoin(t *testing.T, what string, task int, b *plan.Block, g *gpuChunks, dev *cuda.Device) {
	t.Helper()
	chunks, ok := g.grid.meeting(b.Origin, lastOf(b.Origin, b.Shape))
	if !ok || len(b.Held.Join.Pieces) != len(chunks) || b.Held.Narrow != g.narrow || b.Held.Device != dev.Info.Index {
		t.Fatalf("%s: task %d reads a block at %v of shape %v joined from %d pieces; its box meets chunks %v", what, task, b.Origin, b.Shape, len(b.Held.Join.Pieces), chunks)
	}
	chunkVals := map[uintptr]dtype.Slice{}
	for j, i := range chunks {
		p := b.Held.Join.Pieces[j]
		if p.Ptr != uintptr(g.ptrs[i]) || !slices.Equal(p.Origin, g.offs[i]) || !slices.Equal(p.Shape, g.chunkShape(i)) {
			t.Fatalf("%s: task %d: piece %d is %+v, not chunk %d at %v of shape %v", what, task, j, p, i, g.offs[i], g.chunkShape(i))
		}
		chunkVals[p.Ptr] = cutBox(g.host, g.grid.shape, p.Origin, p.Shape)
	}
	want := cutBox(g.host, g.grid.shape, b.Origin, b.Shape)
	for _, collapse := range []bool{false, true} {
		got := dtype.Make(want.DType(), want.Len())
		written := make([]int, want.Len())
		for _, c := range plan.PieceCopies(b) {
			if collapse {
				c = c.Collapse()
			}
			src := chunkVals[c.Ptr]
			idx := make([]int, len(c.Shape))
			for range c.Elements() {
				s, d := c.Src, c.Dst
				for k, x := range idx {
					s += int64(x) * c.SrcStrides[k]
					d += int64(x) * c.DstStrides[k]
				}
				dtype.Copy(got.Slice(int(d), int(d)+1), src.Slice(int(s), int(s)+1))
				written[d]++
				for k := len(idx) - 1; k >= 0; k-- {
					if idx[k]++; idx[k] < c.Shape[k] {
						break
					}
					idx[k] = 0
				}
			}
		}
		if !dtype.Equal(got, want) || slices.ContainsFunc(written, func(n int) bool { return n != 1 }) {
			t.Fatalf("%s: task %d: the copies joining the block at %v of shape %v (collapsed %v) do not give its values once each", what, task, b.Origin, b.Shape, collapse)
		}
	}
}

// lastOf returns the last index of the box at origin with shape.
func lastOf(origin, shape []int) []int {
	hi := make([]int, len(origin))
	for d := range hi {
		hi[d] = origin[d] + shape[d] - 1
	}
	return hi
}

// TestHeldCallsReadOnTheDevice: the library calls (sorts, FFTs, the lazy product, solve and
// the other matrix functions, scans) of an array persisted on a GPU read its chunks where the
// GPU holds them, 4-byte float32 chunks included, when each task's block lies in one chunk;
// otherwise (a sort across chunks, a transform of complex values, which cuFFT reads from host
// memory, a solve's right-hand sides, read whole from host memory) the host read is named in
// Path. Before, every call read
// the array's host copy and Path said nothing: the values went down to the host and up again.
func TestHeldCallsReadOnTheDevice(t *testing.T) {
	dev := &cuda.Device{Info: cuda.DeviceInfo{Index: 0}}
	rs := NewRandomState(11)
	for _, f32 := range []bool{false, true} {
		opts := []ArrayOption{Shape(40, 30), Chunks(10, 30)}
		sq := []ArrayOption{Shape(12, 12), Chunks(12, 12)}
		if f32 {
			opts = append(opts, WithDType(Float32))
			sq = append(sq, WithDType(Float32))
		}
		x, gx := heldForPlanning(t, rs.StandardNormal(opts...), dev, f32)
		m0 := rs.StandardNormal(sq...)
		// A symmetric positive definite matrix, for Cholesky and Eigvalsh.
		m, gm := heldForPlanning(t, m0.Add(m0.T()).Add(Eye(12, anyOpts([]any{12, 0}, sq[1:])...).Mul(30)), dev, f32)
		// Complex values are read by cuFFT on the device too (cuda.DeviceReads).
		z, gz := heldForPlanning(t, rs.StandardNormal(Shape(40, 30), Chunks(10, 30)).AsType(Complex128), dev, false)
		y := rs.StandardNormal(Shape(30, 20), Chunks(30, 10))
		b := rs.StandardNormal(Shape(12, 3), Chunks(12, 3))
		// A call's further operands are read where the GPU holds them: the right-hand sides
		// of a solve, in one chunk or spanning two, and a product's b, whose panels of
		// columns span chunks along both axes.
		hb, gb := heldForPlanning(t, b, dev, false)
		hb2, gb2 := heldForPlanning(t, rs.StandardNormal(Shape(12, 3), Chunks(5, 2)), dev, false)
		yOpts := []ArrayOption{Shape(30, 20), Chunks(12, 7)}
		if f32 {
			yOpts = append(yOpts, WithDType(Float32))
		}
		hy, gy := heldForPlanning(t, rs.StandardNormal(yOpts...), dev, f32)
		// Integers and bools held in their own size, joined in that size.
		xi, gxi := heldForPlanning(t, rs.Integers(-300, 300, Shape(40, 30), Chunks(10, 30), WithDType(Int16)), dev, true)
		xb, gxb := heldForPlanning(t, rs.StandardNormal(Shape(40, 30), Chunks(10, 30)).Gt(0), dev, true)
		cases := []struct {
			what    string
			r       *Array
			x       *Array
			g       *gpuChunks
			inPlace bool // the call stage reads the held chunks where they are
		}{
			{"sort along the chunks' axis", Sort(x, 1), x, gx, true},
			{"argsort descending", Argsort(x, 1, Descending()), x, gx, true},
			{"sort across chunks", Sort(x, 0), x, gx, true},
			{"rfft", Rfft(x, FFTAxis(1)), x, gx, true},
			{"fft", Fft(x, FFTAxis(1)), x, gx, true},
			{"ihfft", Ihfft(x, FFTAxis(1)), x, gx, true},
			{"matmul", MatMul(x, y), x, gx, true},
			{"cumulative sum", CumulativeSum(x, 1, false), x, gx, true},
			{"solve", Solve(m, b), m, gm, true},
			{"inv", Inv(m), m, gm, true},
			{"det", Det(m), m, gm, true},
			{"cholesky", Cholesky(m), m, gm, true},
			{"eigvalsh", Eigvalsh(m), m, gm, true},
			{"pinv", Pinv(m), m, gm, true},
			{"fft of complex values", Fft(z, FFTAxis(1)), z, gz, true},
			{"ifft of complex values", Ifft(z, FFTAxis(1)), z, gz, true},
			{"irfft of complex values", Irfft(z, FFTAxis(1)), z, gz, true},
			{"hfft of complex values, padded", Hfft(z, FFTAxis(1), FFTLen(70)), z, gz, true},
			{"solve for held right-hand sides", Solve(m0.Add(Eye(12, anyOpts([]any{12, 0}, sq[1:])...).Mul(30)), hb), hb, gb, true},
			{"solve for held right-hand sides in several chunks", Solve(m0.Add(Eye(12, anyOpts([]any{12, 0}, sq[1:])...).Mul(30)), hb2), hb2, gb2, true},
			{"matmul by a held b", MatMul(x, hy), hy, gy, true},
			{"sort across chunks of int16 held in 2 bytes", Sort(xi, 0), xi, gxi, true},
			{"cumulative sum across chunks of bools held in 1 byte", CumulativeSum(xb, 0, false), xb, gxb, true},
		}
		for _, c := range cases {
			what := fmt.Sprintf("%s (float32 %v)", c.what, f32)
			if err := c.r.Err(); err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			stages, host := planHeld(t, c.r, c.x, c.g, dev)
			calls := 0
			for _, st := range stages {
				named := slices.ContainsFunc(host, func(h string) bool {
					return strings.HasPrefix(h, "host read:") && strings.Contains(h, "that the "+st.what+" reads")
				})
				switch {
				case st.onHost && !named:
					t.Errorf("%s: the %s reads the held array from host memory, and Path does not say so (host steps %q)", what, st.what, host)
				case !st.onHost && named:
					t.Errorf("%s: Path names a host read of the %s, which reads the array in place", what, st.what)
				case !st.onHost && st.inPlace == 0:
					t.Errorf("%s: the %s neither reads the held array in place nor from the host", what, st.what)
				}
				if !st.isCall {
					continue
				}
				calls++
				if c.inPlace && (st.onHost || st.inPlace == 0) {
					t.Errorf("%s: the %v call reads the held array from host memory (%d blocks in place; host steps %q)", what, st.call, st.inPlace, host)
				}
			}
			if c.inPlace && calls == 0 {
				t.Errorf("%s: no call stage reads the held array (stages %+v)", what, stages)
			}
			if !c.inPlace && !slices.ContainsFunc(stages, func(s heldStage) bool { return s.onHost }) {
				t.Errorf("%s: no stage reads the held array from the host (stages %+v)", what, stages)
			}
		}
	}
	// An array held on a GPU that the computation does not run on is read from the host,
	// and Path says why.
	other := &cuda.Device{Info: cuda.DeviceInfo{Index: 1}}
	x1, g1 := heldForPlanning(t, rs.StandardNormal(Shape(40, 30), Chunks(10, 30)), other, false)
	stages, host := planHeld(t, Sort(x1, 1), x1, g1, dev)
	if len(stages) != 1 || !stages[0].onHost || len(host) != 1 || !strings.Contains(host[0], "held on gpu 1, which this computation does not run on") {
		t.Errorf("a sort of an array held on another GPU: stages %+v, host steps %q", stages, host)
	}
}

// TestHeldPanelsJoinedOnTheDevice: a sort along the rows of a result a GPU keeps in row panels
// (a deviceBuffer, as linear algebra leaves its results) reads, per task, a block spanning all
// the panels: a join of those panels (the panels at their addresses, whole width) whose copies,
// done here on the panels' host values (plan.JoinValues), give the block's values.
func TestHeldPanelsJoinedOnTheDevice(t *testing.T) {
	dev := &cuda.Device{Info: cuda.DeviceInfo{Index: 0}}
	x, err := NewRandomState(3).StandardNormal(Shape(40, 12), Chunks(10, 12)).Compute(Inline())
	if err != nil {
		t.Fatal(err)
	}
	vals, err := x.n.Values()
	if err != nil {
		t.Fatal(err)
	}
	rows := []int{10, 15, 15}
	b := &deviceBuffer{dev: dev, rows: rows, cols: 12, host: vals.Float64s()}
	b.idle.L = &b.mu
	at := map[uintptr]dtype.Slice{}
	row := 0
	for i, r := range rows {
		p := driver.DevicePtr(heldBase + uint64(i)<<24)
		b.panels = append(b.panels, p)
		at[uintptr(p)] = cutBox(vals, []int{40, 12}, []int{row, 0}, []int{r, 12})
		row += r
	}
	n, err := expr.NewBuffered(b, []int{40, 12}, [][]int{rows, {6, 6}})
	if err != nil {
		t.Fatal(err)
	}
	a := &Array{n: n}
	joined := 0
	done := map[*expr.Node]dtype.Slice{}
	for id, node := range stageOrder([]*expr.Node{Sort(a, 0).n}) {
		st, err := plan.Lower(id, node, done, plan.Options{Held: heldOn(dev), LateGather: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(st.HostReads) > 0 {
			t.Errorf("the %s reads the kept result from host memory", describeKernel(st.Kernel))
		}
		for _, task := range st.Tasks {
			for _, blk := range task.Inputs {
				if blk.Held == nil || blk.Held.Join == nil {
					continue
				}
				joined++
				var pv []dtype.Slice
				for i, p := range blk.Held.Join.Pieces {
					if p.Ptr != uintptr(b.panels[i]) || p.Shape[0] != rows[i] || p.Shape[1] != 12 {
						t.Fatalf("task %d: piece %d is %+v, not panel %d", task.Index, i, p, i)
					}
					pv = append(pv, at[p.Ptr])
				}
				got, err := plan.JoinValues(&blk, pv)
				if err != nil {
					t.Fatal(err)
				}
				if want := cutBox(vals, []int{40, 12}, blk.Origin, blk.Shape); !dtype.Equal(got, want) {
					t.Fatalf("task %d: the joined block at %v of shape %v differs from the result's values there", task.Index, blk.Origin, blk.Shape)
				}
			}
		}
		if done[node], err = runStage(mustConfig(t), id, node, done, func(int) {}); err != nil {
			t.Fatal(err)
		}
	}
	if joined == 0 {
		t.Fatal("no task reads a block joined from the row panels")
	}
}

func mustConfig(t *testing.T) computeConfig {
	t.Helper()
	cfg, err := configure([]ComputeOption{Inline()})
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestWorkerHostReadsNamed: outputs of a GPU cluster worker that read chunks kept on its GPU
// through host memory (plan.Output.HostRead) are named for Path, once per reason with the
// count of such chunks; outputs without it add nothing.
func TestWorkerHostReadsNamed(t *testing.T) {
	cfg := mustConfig(t)
	cfg.notes = &engine.HostNotes{} // as Compute gives a cluster computation
	k := &plan.Kernel{Shape: []int{40, 30}, Call: &plan.CallStep{Call: expr.Call{Fn: expr.FnSort}}}
	st := &plan.Stage{Kernel: k}
	reportFallbacks(cfg, st, []*plan.Output{{}, {}})
	if s := cfg.notes.String(); s != "" {
		t.Fatalf("notes %q for outputs that read nothing through host memory", s)
	}
	why := "a block joins chunks kept on other workers, which come through host memory"
	reportFallbacks(cfg, st, []*plan.Output{{HostRead: why}, {}, {HostRead: why}})
	want := "host read: 2 of 3 chunks of the sort of shape (40, 30) read chunks kept on a GPU cluster worker's GPU through its host memory (" + why + ")"
	if s := cfg.notes.String(); s != want {
		t.Fatalf("notes %q, want %q", s, want)
	}
}

// TestHeldOnGPUPredicate checks which arrays HeldOnGPU reports held in GPU memory (the arrays
// a GPU compute leaves where they are, and dataframe's materialize too), as Where names a GPU:
// chunks held on a GPU and the linear algebra's row panels kept on one, yes; lazy work on
// them, host data, an array persisted on the host and an error, no.
func TestHeldOnGPUPredicate(t *testing.T) {
	dev := &cuda.Device{Info: cuda.DeviceInfo{Index: 1}}
	x := NewRandomState(8).StandardNormal(Shape(100), Chunks(25))
	held, _ := heldForPlanning(t, x, dev, false)
	panels, err := expr.NewBuffered(&deviceBuffer{dev: dev, rows: []int{10}, cols: 10}, []int{10, 10}, [][]int{{10}, {10}})
	if err != nil {
		t.Fatal(err)
	}
	host := x.Persist(Inline())
	defer host.Release()
	for _, c := range []struct {
		name string
		a    *Array
		want bool
	}{
		{"held on gpu 1", held, true},
		{"lazy work on it", held.Mul(2), false},
		{"host data", FromSlice([]float64{1, 2}), false},
		{"persisted on the host", host, false},
		{"an error", x.Reshape(7, 7), false},
		{"row panels on a GPU", &Array{n: panels}, true},
	} {
		if got := c.a.HeldOnGPU(); got != c.want || got != strings.HasPrefix(c.a.Where(), "gpu") {
			t.Errorf("%s (where %q): HeldOnGPU %v, want %v", c.name, c.a.Where(), got, c.want)
		}
	}
	if w := held.Where(); w != "gpu 1" {
		t.Errorf("held: where %q", w)
	}
}
