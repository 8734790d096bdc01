package gpuarray

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/apicov"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/engine"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// gpuDecisions is a scheduler that records what the GPU backend decides for every kernel it is
// given, planned as the GPU scheduler plans (takes left for the device to gather): a fused
// kernel, a generated scan, a registered library's call (cuda.Lowers, which asks no driver),
// a take gathered on the device or on the host (cuda.HostGathers), or a host fallback and why.
// It then runs the tasks on the CPU, so later stages see real values. It needs no GPU.
type gpuDecisions struct {
	host    []string // one line per kernel that would run on the host or gather there
	sorts   bool     // a call of the device radix sort
	scans   bool     // a generated scan kernel
	gathers bool     // a block gathered on the device
	reduces bool     // a generated reduction kernel
	calls   []string // the library calls, for messages
}

func (c *gpuDecisions) plansForGPU() {}

func (c *gpuDecisions) Run(ctx context.Context, tasks []*plan.Task, done func(int)) ([]*plan.Output, error) {
	kernels, groups := byKernel(tasks)
	for _, k := range kernels {
		if err := cuda.Lowers(k); err != nil {
			c.host = append(c.host, fmt.Sprintf("host fallback: %s (%v)", describeKernel(k), err))
			continue
		}
		if cuda.HostGathers(&plan.Stage{Tasks: groups[k]}) {
			c.host = append(c.host, "host gather: "+describeKernel(k))
			continue
		}
		c.gathers = c.gathers || gathersOnDevice(groups[k])
		c.reduces = c.reduces || k.Reduce != nil
		if k.Call != nil {
			lib := cuda.CallLibrary(k.Call.Fn)
			c.sorts = c.sorts || k.Call.Fn.Sorts() && lib == "the device radix sort"
			c.scans = c.scans || k.Call.Fn.Scans()
			if what := fmt.Sprintf("%v on %s", k.Call.Fn, lib); !slices.Contains(c.calls, what) {
				c.calls = append(c.calls, what)
			}
		}
	}
	return engine.Inline{}.Run(ctx, tasks, done)
}

// gathersOnDevice reports whether a task reads a block that a device kernel gathers.
func gathersOnDevice(tasks []*plan.Task) bool {
	for _, t := range tasks {
		for _, b := range t.Inputs {
			if b.Gather != nil && b.Data.IsNil() {
				return true
			}
		}
	}
	return false
}

// column is the README's GPU column for what c saw; masked says the arrays' graphs hold a
// mask, whose selected positions are listed on the host (its length must be known).
func (c *gpuDecisions) column(masked bool) string {
	switch {
	case len(c.host) > 0:
		return apicov.Host
	case masked && c.sorts && c.scans && c.gathers:
		return apicov.SortScanMask
	case masked && c.sorts && c.gathers:
		return apicov.SortMask
	case masked && c.gathers && !c.sorts && !c.scans:
		return apicov.MaskGather
	case masked:
		return fmt.Sprintf("(a mask with sorts %v, scans %v, gathers %v)", c.sorts, c.scans, c.gathers)
	case c.sorts && !c.scans && !c.gathers:
		return apicov.Radix
	case c.scans && !c.sorts && !c.gathers:
		return apicov.Scan
	case c.gathers && !c.sorts && !c.scans:
		return apicov.Gather
	case c.sorts || c.scans:
		return fmt.Sprintf("(sorts %v, scans %v, gathers %v)", c.sorts, c.scans, c.gathers)
	case c.reduces:
		return apicov.Kernel
	}
	return apicov.Fused
}

// decide computes arrays with a gpuDecisions scheduler and returns it, with whether their
// graphs hold a mask.
func decide(t *testing.T, what string, arrays ...*Array) (*gpuDecisions, bool) {
	t.Helper()
	c := &gpuDecisions{}
	masked := false
	for _, a := range arrays {
		masked = masked || hasMask(a.n)
		if _, err := a.Compute(On(c)); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	return c, masked
}

// TestCoverageRowsMatchTheLowering: the GPU column of the README's coverage rows of take and
// of the searching, set, sorting, statistical and utility functions says what the GPU lowering
// decides for them, on float64, int32, int64 and bool arrays with uneven chunks, so the table
// cannot drift from the code again: a stage that falls back to the host makes the row "host".
func TestCoverageRowsMatchTheLowering(t *testing.T) {
	rows := map[string]func(x *Array) []*Array{
		"unique_values": func(x *Array) []*Array { return []*Array{UniqueValues(x)} },
		"unique_counts": func(x *Array) []*Array { v, c := UniqueCounts(x); return []*Array{v, c} },
		"unique_inverse": func(x *Array) []*Array {
			v, i := UniqueInverse(x)
			return []*Array{v, i}
		},
		"unique_all": func(x *Array) []*Array {
			v, i, inv, c := UniqueAll(x)
			return []*Array{v, i, inv, c}
		},
		"nonzero":        func(x *Array) []*Array { return Nonzero(x) },
		"sort":           func(x *Array) []*Array { return []*Array{Sort(x, 1)} },
		"argsort":        func(x *Array) []*Array { return []*Array{Argsort(x, 0)} },
		"cumulative_sum": func(x *Array) []*Array { return []*Array{CumulativeSum(x, 1, false)} },
		"prod":           func(x *Array) []*Array { return []*Array{x.Prod(1)} },
		"searchsorted": func(x *Array) []*Array {
			// The sorted array computed by a stage of its own (a range), the values searched
			// for fused into the search's kernel.
			edges := Linspace(-25, 25, 37, Chunks(10))
			return []*Array{Searchsorted(edges, x.Mul(x).Sub(3), "right"), Searchsorted(edges, x, "left")}
		},
		"take":   func(x *Array) []*Array { return []*Array{Take(x, FromSliceInt64([]int64{3, 0, 3, 1}), 1)} },
		"argmax": func(x *Array) []*Array { return []*Array{x.ArgMax(0)} },
		"argmin": func(x *Array) []*Array { return []*Array{x.ArgMin(1)} },
		"where":  func(x *Array) []*Array { return []*Array{Where(x.Ne(0), x, x.Slice(At(0)))} },
		"sum":    func(x *Array) []*Array { return []*Array{x.Sum(0), x.Sum()} },
		"mean":   func(x *Array) []*Array { return []*Array{x.Mean(1)} },
		"max":    func(x *Array) []*Array { return []*Array{x.Max(0)} },
		"min":    func(x *Array) []*Array { return []*Array{x.Min()} },
		"std":    func(x *Array) []*Array { return []*Array{x.Std(0)} },
		"var":    func(x *Array) []*Array { return []*Array{x.Var(1)} },
		"all":    func(x *Array) []*Array { return []*Array{x.All(1)} },
		"any":    func(x *Array) []*Array { return []*Array{x.Any(0)} },
	}
	rs := NewRandomState(4)
	inputs := []*Array{
		rs.StandardNormal(Shape(40, 75), Chunks(13, 30)).Round(),
		rs.Integers(-20, 20, Shape(40, 75), Chunks(17, 40), WithDType(Int32)),
		rs.Integers(0, 3, Shape(40, 75), Chunks(40, 20), WithDType(Int64)),
		rs.Integers(0, 2, Shape(40, 75), Chunks(9, 75), WithDType(Int64)).Ne(0),
	}
	seen := 0
	for _, r := range apicov.Rows {
		f, ok := rows[r.API]
		if !ok {
			continue
		}
		seen++
		for _, x := range inputs {
			c, masked := decide(t, fmt.Sprintf("%s of %v", r.API, x.DType()), f(x)...)
			if got := c.column(masked); got != r.GPU {
				t.Errorf("%s of %v: the lowering decides %q (host steps %q, calls %q), the coverage table says %q",
					r.API, x.DType(), got, c.host, c.calls, r.GPU)
			}
		}
	}
	if seen != len(rows) {
		t.Fatalf("%d of the %d rows found in apicov.Rows", seen, len(rows))
	}
	// The check sees a fallback: complex takes are gathered on the host.
	z := inputs[0].AsType(Complex128)
	if c, _ := decide(t, "complex take", Take(z, FromSliceInt64([]int64{3, 0, 3, 1}), 1)); c.column(false) != apicov.Host {
		t.Errorf("a complex take lowers to %q (host steps %q)", c.column(false), c.host)
	}
}

// TestIntegerMedianRunsOnTheGPU: the median and quantiles of integer and bool arrays lower
// every stage to the GPU (the device sort, then fused kernels that cast the kept values), and
// match the CPU's, for axes with an odd and an even length.
func TestIntegerMedianRunsOnTheGPU(t *testing.T) {
	rs := NewRandomState(8)
	for _, x := range []*Array{
		rs.Integers(-1000, 1000, Shape(31, 40), Chunks(10, 15), WithDType(Int32)),
		rs.Integers(0, 1<<40, Shape(31, 40), Chunks(31, 7), WithDType(Int64)),
		rs.Integers(0, 200, Shape(31, 40), Chunks(5, 40), WithDType(Uint8)),
		rs.Integers(0, 2, Shape(31, 40), Chunks(8, 8), WithDType(Int64)).Ne(0),
	} {
		for _, a := range []*Array{Median(x, 0), Median(x, 1), Quantile(x, 0.3, 0), Percentiles(x, []float64{10, 90}, 1)} {
			c, _ := decide(t, fmt.Sprint(x.DType()), a)
			if len(c.host) > 0 || !c.sorts {
				t.Errorf("%v quantiles: host steps %q, calls %q", x.DType(), c.host, c.calls)
			}
			got, err := a.ToSlice(On(c))
			if err != nil {
				t.Fatal(err)
			}
			want, err := a.ToSlice(Inline())
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%v quantiles: %v, the CPU's %v", x.DType(), got, want)
			}
		}
	}
}

// BenchmarkMaskPositions lists the selected positions of a computed mask of 2e7 bools (half
// of them set, in 8 chunks): the host step of every Mask, Nonzero and Unique, on any backend.
func BenchmarkMaskPositions(b *testing.B) {
	const n = 20_000_000
	m, err := NewRandomState(3).Uniform(0, 1, Shape(n), Chunks(n/8)).Lt(0.5).Compute(Inline())
	if err != nil {
		b.Fatal(err)
	}
	x := Arange(0, n, 1, ChunkSizes([]int{n / 8, n / 8, n / 8, n / 8, n / 8, n / 8, n / 8, n / 8}))
	node := x.Mask(m).n
	cfg, err := configure([]ComputeOption{Inline()})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(n)
	for b.Loop() {
		if _, err := takeMasked(cfg, node); err != nil {
			b.Fatal(err)
		}
	}
}

// TestMaskPositions: the positions listed from a bool mask (random, all set, none set, bytes
// other than 1 read from a file) and from a float64 mask (NaN counts as selected) are those of
// its nonzero elements, in order.
func TestMaskPositions(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 7))
	raw := make([]byte, 1000)
	for i := range raw {
		if r.IntN(3) == 0 {
			raw[i] = byte(r.IntN(256))
		}
	}
	fromBytes, err := dtype.FromBytes(dtype.Bool, raw)
	if err != nil {
		t.Fatal(err)
	}
	bools := func(f func(i int) bool, n int) dtype.Slice {
		b := make([]bool, n)
		for i := range b {
			b[i] = f(i)
		}
		return dtype.OfBool(b)
	}
	floats := make([]float64, 777)
	for i := range floats {
		switch r.IntN(4) {
		case 0:
			floats[i] = math.NaN()
		case 1:
			floats[i] = r.NormFloat64()
		}
	}
	for name, m := range map[string]dtype.Slice{
		"random":     bools(func(int) bool { return r.IntN(2) == 0 }, 1001),
		"all":        bools(func(int) bool { return true }, 65),
		"none":       bools(func(int) bool { return false }, 65),
		"empty":      bools(nil, 0),
		"raw bytes":  fromBytes,
		"float64":    dtype.OfFloat64(floats),
		"last only":  bools(func(i int) bool { return i == 99 }, 100),
		"first only": bools(func(i int) bool { return i == 0 }, 100),
	} {
		var want []int64
		for i := range m.Len() {
			if v := m.Float(i); v != 0 {
				want = append(want, int64(i))
			}
		}
		if got := maskPositions(m); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
}
