package cuda

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
)

// groupAggCase is random rows for a group-aggregate kernel: codes in [-1, groups+1] (those
// outside [0, groups) skip their row), int64 values of both signs and float64 values with NaNs.
type groupAggCase struct {
	codes  []int64
	ints   []int64
	floats []float64
}

func newGroupAggCase(n, groups int, seed uint64) groupAggCase {
	r := rand.New(rand.NewPCG(seed, 7))
	c := groupAggCase{codes: make([]int64, n), ints: make([]int64, n), floats: make([]float64, n)}
	for i := range c.codes {
		c.codes[i] = int64(r.IntN(groups+3)) - 1
		c.ints[i] = r.Int64N(1<<40) - 1<<39
		c.floats[i] = r.NormFloat64() * 1e3
		if r.IntN(17) == 0 {
			c.floats[i] = math.NaN()
		}
		if r.IntN(29) == 0 {
			c.floats[i] = math.Copysign(0, -1)
		}
	}
	return c
}

// reference aggregates c on the CPU with dataframe/hashagg, groups numbered by code.
func (c groupAggCase) reference(t *testing.T, groups int, float bool) *hashagg.Partial {
	t.Helper()
	ids := make([]int32, len(c.codes))
	for i, k := range c.codes {
		ids[i] = -1
		if k >= 0 && k < int64(groups) {
			ids[i] = int32(k)
		}
	}
	keys := make([]int64, groups)
	for k := range keys {
		keys[k] = int64(k)
	}
	v := hashagg.Values{Int: c.ints}
	if float {
		v = hashagg.Values{Float: c.floats}
	}
	specs := []hashagg.Spec{{Op: hashagg.Count}, {Op: hashagg.Sum}, {Op: hashagg.Min}, {Op: hashagg.Max}, {Op: hashagg.Var}}
	p, err := hashagg.Aggregate(&hashagg.Groups{IDs: ids, N: groups, Keys: [][]int64{keys}}, specs, []hashagg.Values{v})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// checkGroupAgg compares a kernel's states r with hashagg's partial p: counts, integer sums,
// minima and maxima bit for bit, float sums within n ulp of the sum of magnitudes, variance
// from sum and sum of squares within the bound its cancellation allows.
func checkGroupAgg(t *testing.T, name string, r *GroupAggResult, p *hashagg.Partial, c groupAggCase, float bool) {
	t.Helper()
	groups := p.N
	absSum := make([]float64, groups)
	sqSum := make([]float64, groups)
	for i, k := range c.codes {
		if k < 0 || k >= int64(groups) {
			continue
		}
		x := float64(c.ints[i])
		if float {
			x = c.floats[i]
		}
		if x == x {
			absSum[k] += math.Abs(x)
			sqSum[k] += x * x
		}
	}
	cnt, sum, mn, mx, vr := p.States[0], p.States[1], p.States[2], p.States[3], p.States[4]
	for g := 0; g < groups; g++ {
		if r.Count[g] != cnt.Cnt[g] {
			t.Fatalf("%s: group %d count %d, hashagg %d", name, g, r.Count[g], cnt.Cnt[g])
		}
		n := float64(cnt.Cnt[g])
		if float {
			if d, bound := math.Abs(r.SumF[g]-sum.SumF[g]), 2*n*0x1p-52*absSum[g]; d > bound {
				t.Fatalf("%s: group %d sum %v, hashagg %v (|d| %g > bound %g)", name, g, r.SumF[g], sum.SumF[g], d, bound)
			}
		} else if r.SumI[g] != sum.SumI[g] {
			t.Fatalf("%s: group %d sum %d, hashagg %d", name, g, r.SumI[g], sum.SumI[g])
		}
		if cnt.Cnt[g] > 0 {
			if float {
				// -0 and +0 compare equal; the kernel keeps -0 as the smaller.
				if r.MinF[g] != mn.SumF[g] || r.MaxF[g] != mx.SumF[g] {
					t.Fatalf("%s: group %d min %v max %v, hashagg %v %v", name, g, r.MinF[g], r.MaxF[g], mn.SumF[g], mx.SumF[g])
				}
			} else if r.MinI[g] != mn.SumI[g] || r.MaxI[g] != mx.SumI[g] {
				t.Fatalf("%s: group %d min %d max %d, hashagg %d %d", name, g, r.MinI[g], r.MaxI[g], mn.SumI[g], mx.SumI[g])
			}
		}
		if cnt.Cnt[g] > 1 {
			s := r.SumF
			if !float {
				s = make([]float64, groups)
				s[g] = float64(r.SumI[g])
			}
			v := (r.SumSq[g] - s[g]*s[g]/n) / (n - 1)
			want := vr.M2[g] / (n - 1)
			// The sum of squares, and the square of the sum over n, each within about n ulp
			// of sqSum: their difference is good to that over n-1.
			if d, bound := math.Abs(v-want), 4*n*0x1p-52*sqSum[g]/(n-1)+1e-300; d > bound {
				t.Fatalf("%s: group %d var %v, hashagg %v (|d| %g > bound %g)", name, g, v, want, d, bound)
			}
		}
	}
}

// runGroupAggInterp interprets kernel a over c in S blocks and returns its output words.
func runGroupAggInterp(t *testing.T, a ptx.GroupAgg, c groupAggCase, S int) []uint64 {
	t.Helper()
	text, err := a.PTX("8.0", "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	prog := ptxtest.Parse(t, text)
	n := len(c.codes)
	const codesAt, valsAt = 1 << 20, 1 << 28
	outAt := uint64(1 << 36)
	mem := map[uint64]uint64{}
	for i := range c.codes {
		mem[codesAt+8*uint64(i)] = uint64(c.codes[i])
		if a.Float {
			mem[valsAt+8*uint64(i)] = math.Float64bits(c.floats[i])
		} else {
			mem[valsAt+8*uint64(i)] = uint64(c.ints[i])
		}
	}
	states := a.States.List()
	for j, st := range states {
		for k := 0; k < a.Groups; k++ {
			mem[outAt+8*uint64(j*a.Groups+k)] = st.Init()
		}
	}
	params := map[string]uint64{"codes": codesAt, "vals": valsAt, "n": uint64(n), "out": outAt, "S": uint64(S)}
	for b := 0; b < S; b++ {
		ptxtest.Run(t, prog, b, 0, params, mem, nil)
	}
	words := make([]uint64, len(states)*a.Groups)
	for i := range words {
		words[i] = mem[outAt+8*uint64(i)]
	}
	return words
}

// TestGroupAggKernelMatchesHashagg runs the generated group-aggregate kernels (shared-memory
// tables and global atomics, integer and float values, several blocks) in the PTX interpreter
// and compares their states with dataframe/hashagg's.
func TestGroupAggKernelMatchesHashagg(t *testing.T) {
	all := ptx.GroupCount | ptx.GroupSum | ptx.GroupSumSq | ptx.GroupMin | ptx.GroupMax
	for _, tc := range []struct {
		groups, n, S int
		float        bool
	}{
		{groups: 7, n: 3000, S: 3, float: false},
		{groups: 7, n: 3000, S: 3, float: true},
		{groups: 1500, n: 2500, S: 2, float: false}, // 1500×5 words: global atomics
		{groups: 1500, n: 2500, S: 2, float: true},
	} {
		a := GroupAggKernel(tc.groups, tc.float, all)
		name := a.Name()
		if a.Shared != (tc.groups == 7) {
			t.Fatalf("%s: shared %v for %d groups of 5 states", name, a.Shared, tc.groups)
		}
		c := newGroupAggCase(tc.n, tc.groups, uint64(tc.groups*10+tc.n))
		words := runGroupAggInterp(t, a, c, tc.S)
		r := groupAggResult(words, tc.groups, tc.float, all)
		checkGroupAgg(t, name, r, c.reference(t, tc.groups, tc.float), c, tc.float)
	}
}

// TestGroupAggKernelCountOnly checks a kernel of counts alone reads no values (a Size over
// codes needs none) and that a table too big for shared memory is refused in the shared form.
func TestGroupAggKernelCountOnly(t *testing.T) {
	a := GroupAggKernel(10, false, ptx.GroupCount)
	text, err := a.PTX("8.0", "sm_90")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(text, "ld.global.nc") != 1 {
		t.Fatalf("a count-only kernel loads %d times per row, want 1 (the code):\n%s", strings.Count(text, "ld.global.nc"), text)
	}
	c := newGroupAggCase(1000, 10, 3)
	words := runGroupAggInterp(t, a, c, 2)
	want := make([]int64, 10)
	for _, k := range c.codes {
		if k >= 0 && k < 10 {
			want[k]++
		}
	}
	for g, w := range want {
		if int64(words[g]) != w {
			t.Fatalf("group %d: count %d, want %d", g, words[g], w)
		}
	}
	big := ptx.GroupAgg{Groups: ptx.GroupAggSharedMax, States: ptx.GroupCount | ptx.GroupSum, Shared: true}
	if _, err := big.PTX("8.0", "sm_90"); err == nil {
		t.Fatal("shared tables of 2×4096 words: no error")
	}
}

// TestOrderedKeyOrdersFloats checks the float keys of min and max order as the floats do.
func TestOrderedKeyOrdersFloats(t *testing.T) {
	xs := []float64{math.Inf(-1), -1e300, -1, -1e-300, math.Copysign(0, -1), 0, 1e-300, 1, 1e300, math.Inf(1)}
	for i := range xs {
		if got := ptx.FromOrderedKey(ptx.OrderedKey(xs[i])); math.Float64bits(got) != math.Float64bits(xs[i]) {
			t.Fatalf("round trip of %v: %v", xs[i], got)
		}
		if i > 0 && ptx.OrderedKey(xs[i-1]) >= ptx.OrderedKey(xs[i]) {
			t.Fatalf("key of %v >= key of %v", xs[i-1], xs[i])
		}
	}
}
