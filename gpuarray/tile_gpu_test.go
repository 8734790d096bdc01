package gpuarray

import (
	"context"
	"fmt"
	"math"
	"os"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/kernels"
)

// TestGPUTransposedReadsMatchCPU: expressions that read a stored array across its rows (x.T of
// a persisted or uploaded x, and a transposed 3-d array) run through tiled kernels on the
// GPU (tiles of 32 x 32 through shared memory, cuda.Spec.Tile); their results equal the CPU's:
// elementwise values and min/max bit for bit, sums and standard deviations to a relative
// 1e-12. Sides that are not multiples of the tile and chunks of unequal sides cover the edges.
func TestGPUTransposedReadsMatchCPU(t *testing.T) {
	needGPU(t)
	x := NewRandomState(31).Normal(0, 1, Shape(1000, 1000), Chunks(300, 260))
	p := x.Persist(OnGPU())
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	defer p.Release()
	data := make([]float64, 3*190*170)
	for i := range data {
		data[i] = math.Sin(float64(i)*0.37) * float64(i%97)
	}
	u := FromSlice(data, Shape(3, 190, 170), Chunks(2, 100, 64))
	v := FromSlice(data[:190*170], Shape(190, 170), Chunks(64, 100))
	w := FromSlice(data[190*170:2*190*170], Shape(170, 190), Chunks(100, 64))
	// Full reductions of f(p, p.T) are mirrored, read untiled in the regenerated mirror's order
	// (cuda's mirrorOn), unless GPUNOTES_PTX_MIRROR=0.
	mirror := os.Getenv("GPUNOTES_PTX_MIRROR") != "0"
	cases := []struct {
		name      string
		gpu, cpu  *Array
		exact     bool
		wantTiled bool
	}{
		{"sum(p + p.T)", p.Add(p.T()).Sum(), x.Add(x.T()).Sum(), false, !mirror},
		{"max(p - 2 p.T)", p.Sub(p.T().Mul(2)).Max(), x.Sub(x.T().Mul(2)).Max(), true, !mirror},
		{"min(p.T)", p.T().Min(), x.T().Min(), true, true},
		{"std(p * p.T)", p.Mul(p.T()).Std(), x.Mul(x.T()).Std(), false, !mirror},
		{"p + p.T", p.Add(p.T()), x.Add(x.T()), true, true},
		{"sum(u.T(0,2,1) + 1)", u.Transpose(0, 2, 1).Add(1).Sum(), u.Transpose(0, 2, 1).Add(1).Sum(), false, true},
		{"u.T(0,2,1) * 3", u.Transpose(0, 2, 1).Mul(3), u.Transpose(0, 2, 1).Mul(3), true, true},
		{"sum(v.T * w)", v.T().Mul(w).Sum(), v.T().Mul(w).Sum(), false, true},
		{"v + w.T", v.Add(w.T()), v.Add(w.T()), true, true},
	}
	for _, c := range cases {
		got, err := c.gpu.ToSlice(OnGPU())
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		want, err := c.cpu.ToSlice(Threads(0))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if len(got) != len(want) {
			t.Fatalf("%s: %d values, want %d", c.name, len(got), len(want))
		}
		for i := range want {
			ok := got[i] == want[i]
			if !c.exact {
				ok = math.Abs(got[i]-want[i]) <= 1e-12*math.Max(1, math.Abs(want[i]))*math.Sqrt(float64(len(data)))
			}
			if !ok {
				t.Fatalf("%s[%d]: GPU %v, CPU %v", c.name, i, got[i], want[i])
			}
		}
		if tiled := gpuTiled(t, c.gpu); tiled != c.wantTiled {
			t.Errorf("%s: tiled %v, want %v", c.name, tiled, c.wantTiled)
		}
	}
}

// gpuTiled reports whether the GPU kernel of a's last stage is tiled (cuda.Spec.Tile).
func gpuTiled(t *testing.T, a *Array) bool {
	t.Helper()
	s, err := gpuScheduler([]int{0})
	if err != nil {
		t.Fatal(err)
	}
	st, err := plan.Lower(0, a.n, map[*expr.Node]dtype.Slice{}, planOptions(s, 0))
	if err != nil {
		t.Fatal(err)
	}
	spec, _, err := cuda.Lower(st.Kernel)
	if err != nil {
		t.Fatal(err)
	}
	return spec.Tile
}

// tileRecorder is a scheduler that lowers each kernel to its GPU spec, records it, and runs the
// tasks on the CPU.
type tileRecorder struct{ specs []*cuda.Spec }

func (c *tileRecorder) Run(ctx context.Context, tasks []*plan.Task, done func(int)) ([]*plan.Output, error) {
	spec, _, err := cuda.Lower(tasks[0].Kernel)
	if err != nil {
		return nil, fmt.Errorf("host fallback for %s: %w", describeKernel(tasks[0].Kernel), err)
	}
	c.specs = append(c.specs, spec)
	return engine.Inline{}.Run(ctx, tasks, done)
}

// TestTransposedInputsLowerToTiles: kernels that read stored data across its rows lower to
// tiled kernels (the transposed inputs marked, the PTX generated with the real device
// library: two barriers per tile, a shared tile per transposed input); those that generate
// random numbers, need the element order (argmax) or keep axes do not. It needs no GPU.
func TestTransposedInputsLowerToTiles(t *testing.T) {
	lib, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	data := make([]float64, 190*170)
	for i := range data {
		data[i] = float64(i%13) - 6
	}
	v := FromSlice(data, Shape(190, 170), Chunks(64, 100))
	w := FromSlice(data, Shape(170, 190), Chunks(100, 64))
	u := FromSlice(data, Shape(5, 38, 170), Chunks(2, 20, 64))
	z := FromSlice(data, Shape(190, 170), Chunks(90, 80)).Mul(-1)
	x := NewRandomState(3).Normal(0, 1, Shape(170, 170), Chunks(64, 64))
	y := NewRandomState(4).Normal(0, 1, Shape(170, 190), Chunks(100, 64))
	skinny := FromSlice(data[:900], Shape(300, 3), Chunks(100, 3))
	skinny2 := FromSlice(data[900:1800], Shape(3, 300), Chunks(3, 100))
	cases := []struct {
		name       string
		a          *Array
		transposed int // transposed inputs of a tiled kernel; -1: not tiled
	}{
		{"sum(v.T * w)", v.T().Mul(w).Sum(), 1},
		{"v + w.T", v.Add(w.T()), 1},
		{"max(v.T + z.T)", v.T().Add(z.T()).Max(), 2},
		{"sum(u.T(0,2,1))", u.Transpose(0, 2, 1).Sum(), 1},
		{"sum(v)", v.Sum(), -1},
		{"sum(x + x.T)", x.Add(x.T()).Sum(), -1},
		{"sum(v.T + y)", v.T().Add(y).Sum(), -1},
		{"argmax(v.T)", v.T().ArgMax(), -1},
		{"sum(v.T * w, 0)", v.T().Mul(w).Sum(0), -1},
		{"sum(s.T * s2), a side of 3", skinny.T().Mul(skinny2).Sum(), -1},
	}
	for _, c := range cases {
		rec := &tileRecorder{}
		if _, err := c.a.ToSlice(On(rec)); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		s := rec.specs[len(rec.specs)-1]
		n := 0
		for _, nd := range s.Nodes {
			if nd.Transposed {
				n++
			}
		}
		if got := map[bool]int{false: -1, true: n}[s.Tile]; got != c.transposed {
			t.Errorf("%s: %d transposed inputs tiled, want %d (spec %+v)", c.name, got, c.transposed, s)
			continue
		}
		ptx, _, err := cuda.GeneratePTX(s, string(lib))
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if s.Tile && (strings.Count(ptx, "bar.sync 0") != 2 || strings.Count(ptx, ".shared .align 8 .b8 gpn_tile") != n) {
			t.Errorf("%s: %d barriers and %d shared tiles in the tiled PTX", c.name, strings.Count(ptx, "bar.sync 0"), strings.Count(ptx, ".shared .align 8 .b8 gpn_tile"))
		}
	}
}
