package cuda

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/kernels"
)

// reduceOf is a one-leaf spec reducing an input of dtype dt by r (for the host-side collects).
func reduceOf(r Reduce, dt expr.DType) *Spec {
	return &Spec{Rank: 1, Reduce: r, Nodes: []Node{{Kind: NInput, DType: dt}}}
}

// TestIntegerPartialsCollect: integer partials combine as the CPU's int64 accumulators do:
// sums wrap, unsigned values compare unsigned, ArgMin/ArgMax ties go to the smaller index and
// empty slices (index -1) are skipped; complex partials sum pairwise per part.
func TestIntegerPartialsCollect(t *testing.T) {
	u := func(v int64) uint64 { return uint64(v) }
	// 2 kept elements, 3 slices: slot b*2+q.
	words := []uint64{u(math.MaxInt64), u(-5), u(1), u(7), u(3), u(-9)}
	p := collectAxes(reduceOf(RSum, expr.Int64), words, 0, 2, 3)
	if want := []int64{math.MinInt64 + 3, -7}; !slices.Equal(p.Ints, want) {
		t.Fatalf("int64 sums %v, want %v (wrapped)", p.Ints, want)
	}
	p = collectAxes(reduceOf(RMin, expr.Int64), words, 0, 2, 3)
	if want := []int64{1, -9}; !slices.Equal(p.Ints, want) {
		t.Fatalf("int64 min %v, want %v", p.Ints, want)
	}
	p = collectAxes(reduceOf(RMax, expr.Uint64), words, 0, 2, 3)
	if want := []int64{math.MaxInt64, -5}; !slices.Equal(p.Ints, want) { // -5 is 2^64-5 unsigned
		t.Fatalf("uint64 max %v, want %v", p.Ints, want)
	}
	p = collectAxes(reduceOf(RMin, expr.Uint64), words, 0, 2, 3)
	if want := []int64{1, 7}; !slices.Equal(p.Ints, want) {
		t.Fatalf("uint64 min %v, want %v", p.Ints, want)
	}
	// ArgMax over (value, index) pairs: a tie goes to the smaller index, index -1 is skipped.
	arg := []uint64{u(5), 7, u(1), 4, u(5), 2, u(99), ^uint64(0), u(5), 9, u(1), 3}
	p = collectAxes(reduceOf(RArgMax, expr.Int16), arg, 0, 2, 3)
	if !slices.Equal(p.Index, []int64{2, 3}) || !slices.Equal(p.Ints, []int64{5, 1}) {
		t.Fatalf("argmax %v %v", p.Ints, p.Index)
	}
	f := math.Float64bits
	cw := []uint64{f(1), f(-1), f(0.5), f(2), f(0.25), f(4)}
	p = collectAxes(reduceOf(RSum, expr.Complex64), cw, 0, 1, 3)
	if p.Values[0] != 1.75 || p.Imag[0] != 5 {
		t.Fatalf("complex sum %v %v", p.Values, p.Imag)
	}
	d := laneData(reduceOf(RSum, expr.Uint8), []int64{-1}, nil, nil)
	if d.DType() != dtype.Uint64 || d.Uint64s()[0] != math.MaxUint64 {
		t.Fatalf("unsigned partial data %v", d)
	}
	// Full reductions: words of slices 0..2 of task 0.
	res := newResult(reduceOf(RArgMin, expr.Int32), 1)
	collectLane(reduceOf(RArgMin, expr.Int32), res, 0, []uint64{u(3), 10, u(-2), 40, u(-2), 20}, 0, 3)
	if res.Ints[0] != -2 || res.Index[0] != 20 {
		t.Fatalf("full argmin %d at %d, want -2 at 20", res.Ints[0], res.Index[0])
	}
}

// TestIntegerAndComplexReductionsGeneratePTX: every integer reduction and the complex sum
// generate, full and over some axes (block and warp walks), with the real device library:
// integer accumulators in b64 registers compared by the dtype's signedness, no float
// accumulation of integer values, a fixed-order block combine through shared memory.
func TestIntegerAndComplexReductionsGeneratePTX(t *testing.T) {
	lib, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	ints := []expr.DType{expr.Int8, expr.Int16, expr.Int32, expr.Int64, expr.Uint8, expr.Uint16, expr.Uint32, expr.Uint64}
	type cse struct {
		dt expr.DType
		r  Reduce
	}
	var cases []cse
	for _, dt := range ints {
		for _, r := range []Reduce{RSum, RMin, RMax, RArgMin, RArgMax} {
			cases = append(cases, cse{dt, r})
		}
	}
	cases = append(cases, cse{expr.Complex64, RSum}, cse{expr.Complex128, RSum})
	for _, c := range cases {
		for _, mode := range []string{"full", "block", "rows"} {
			s := &Spec{Rank: 2, Reduce: c.r, Nodes: []Node{
				{Kind: NInput, DType: c.dt},
				{Kind: NConst, Value: 3, DType: c.dt},
				{Kind: NBinary, Op: expr.OpMul, Args: [3]int{0, 1}, DType: c.dt},
			}}
			if mode != "full" {
				s.Kept, s.Rows = 1, mode == "rows"
			}
			text, _, err := GeneratePTX(s, string(lib))
			if err != nil {
				t.Fatalf("%v of %v (%s): %v", c.r, c.dt, mode, err)
			}
			if strings.Contains(text, "gpn_block_") {
				t.Errorf("%v of %v (%s): calls a float block reduction", c.r, c.dt, mode)
			}
			if mode != "rows" && !strings.Contains(text, "bar.sync 0") {
				t.Errorf("%v of %v (%s): no block combine", c.r, c.dt, mode)
			}
			want := map[Reduce]string{RSum: "add.s64", RMin: "min.s64", RMax: "max.s64", RArgMin: "setp.lt.s64", RArgMax: "setp.gt.s64"}[c.r]
			if c.dt.Kind() == dtype.KindUint && c.r != RSum {
				want = strings.Replace(want, "s64", "u64", 1)
			}
			if c.dt.IsComplex() {
				want = "add.rn.f64"
				if strings.Contains(text, "add.s64") {
					t.Errorf("complex sum (%s) adds integers", mode)
				}
			} else if strings.Contains(text, "cvt.rn.f64.s64") || strings.Contains(text, "add.rn.f64") {
				t.Errorf("%v of %v (%s): accumulates in floating point", c.r, c.dt, mode)
			}
			if !strings.Contains(text, want) {
				t.Errorf("%v of %v (%s): PTX lacks %q", c.r, c.dt, mode, want)
			}
			stores := s.PartialWords()
			if n := strings.Count(text, "st.global."); n != stores {
				t.Errorf("%v of %v (%s): %d global stores, want %d", c.r, c.dt, mode, n, stores)
			}
		}
	}
	// What NumPy's dtype rules send through float64 is no integer lane's work.
	s := reduceOf(RWelford, expr.Int32)
	if _, _, err := GeneratePTX(s, string(lib)); err == nil {
		t.Fatal("a Welford reduction of int32 values generated")
	}
}
