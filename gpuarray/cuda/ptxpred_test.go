package cuda

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// histSpec is the counting kernel of a histogram of the input (bins equal bins over [lo, hi]),
// the nodes gpuarray.Histogram fuses: the guess r, (v-lo)*s rounded, less one where v lies below
// the edge r*step+lo, and values outside [lo, hi] (NaN too) in an extra bin.
func histSpec(bins int, lo, hi float64) *Spec {
	var ns []Node
	add := func(n Node) int { ns = append(ns, n); return len(ns) - 1 }
	c := func(v float64) int { return add(Node{Kind: NConst, DType: expr.Float64, Value: v}) }
	bin := func(op expr.Op, x, y int, dt expr.DType) int {
		return add(Node{Kind: NBinary, DType: dt, Op: op, Args: [3]int{x, y}})
	}
	where := func(p, x, y int) int { return add(Node{Kind: NWhere, DType: expr.Float64, Args: [3]int{p, x, y}}) }
	f, b := expr.Float64, expr.Bool
	nb, step := float64(bins), (hi-lo)/float64(bins)
	edge := func(i int) int { return bin(expr.OpAdd, bin(expr.OpMul, i, c(step), f), c(lo), f) }
	v := add(Node{Kind: NInput, DType: f})
	keep := bin(expr.OpLogicalAnd, bin(expr.OpGe, v, c(lo), b), bin(expr.OpLe, v, c(hi), b), b)
	const round = 0x1.8p52 // to the nearest integer
	idx := bin(expr.OpSub, bin(expr.OpAdd, bin(expr.OpMul, bin(expr.OpSub, v, c(lo), f), c(nb/(hi-lo)), f), c(round), f), c(round), f)
	idx = where(bin(expr.OpEq, idx, c(nb), b), c(nb-1), idx)
	idx = where(bin(expr.OpLt, v, edge(idx), b), bin(expr.OpSub, idx, c(1), f), idx)
	// A logical not and an xor, so that every rewritten form is interpreted: not(not keep)
	// and keep xor false are keep.
	keep = add(Node{Kind: NUnary, DType: b, Op: expr.OpLogicalNot, Args: [3]int{add(Node{Kind: NUnary, DType: b, Op: expr.OpLogicalNot, Args: [3]int{keep}})}})
	keep = bin(expr.OpLogicalXor, keep, bin(expr.OpLt, v, c(math.Inf(-1)), b), b)
	where(keep, idx, c(nb))
	return &Spec{Rank: 1, Reduce: RCount, Bins: bins + 1, Nodes: ns}
}

// numpyBin is numpy.histogram's bin of v (bins over [lo, hi], edges as numpy.linspace), or
// bins for a value it leaves out.
func numpyBin(v float64, bins int, lo, hi float64) int {
	if !(v >= lo && v <= hi) {
		return bins
	}
	step := (hi - lo) / float64(bins)
	edge := func(i int) float64 { return float64(i)*step + lo }
	i := int((v - lo) / (hi - lo) * float64(bins))
	if i == bins {
		i--
	}
	if v < edge(i) {
		i--
	}
	if i != bins-1 && v >= edge(i+1) {
		i++
	}
	return i
}

// TestHistogramKernelInterpreted interprets a histogram's counting kernel (its bin arithmetic
// fused, bools tested through predicates by predBools) on values on the edges, one ulp on
// either side, outside the range, NaN and the range's ends: the counts are NumPy's bins, and
// the same with the rewrite off.
func TestHistogramKernelInterpreted(t *testing.T) {
	lib, err := ptxtest.Library()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(3, 4))
	const base, out = 1 << 32, 1 << 46
	for _, c := range []struct {
		bins   int
		lo, hi float64
	}{{100, -5, 5}, {7, -0.3, 2.9}, {300, 1.1, 1.7}} {
		s := histSpec(c.bins, c.lo, c.hi)
		const n = 3000
		mem := map[uint64]uint64{}
		want := make([]uint64, c.bins+1)
		step := (c.hi - c.lo) / float64(c.bins)
		for i := range n {
			e := float64(r.IntN(c.bins+1))*step + c.lo
			var v float64
			switch i {
			case 0:
				v = math.NaN()
			case 1, 2:
				v = []float64{c.lo, c.hi}[i-1]
			default:
				switch r.IntN(4) {
				case 0:
					v = e
				case 1:
					v = math.Nextafter(e, math.Inf(2*r.IntN(2)-1))
				default:
					v = c.lo + (c.hi-c.lo)*(r.Float64()*1.2-0.1)
				}
			}
			mem[base+8*uint64(i)] = math.Float64bits(v)
			want[numpyBin(v, c.bins, c.lo, c.hi)]++
		}
		task := heldTask([]int64{n}, []Map{{Strides: []int64{1}}}, []uint64{base}, []int64{n})
		for _, on := range []bool{true, false} {
			setPTX(func(o *ptx.Options) { o.Pred = on })
			text, _, err := GeneratePTX(s, lib)
			if err != nil {
				t.Fatal(err)
			}
			rewritten := strings.Contains(text, "not.pred") && strings.Contains(text, "xor.pred") && strings.Contains(text, "and.pred")
			if rewritten != on {
				t.Fatalf("predicates rewritten: %v, want %v", rewritten, on)
			}
			got := countRun(t, lib, s, []Task{task}, mem, out)[0]
			if got[c.bins+1] != 0 {
				t.Fatalf("%+v: flag for value %v", c, math.Float64frombits(got[c.bins+2]))
			}
			for k := range c.bins + 1 {
				if got[k] != want[k] {
					t.Fatalf("%+v, rewrite %v: bin %d holds %d, want %d", c, on, k, got[k], want[k])
				}
			}
		}
		setPTX(func(o *ptx.Options) { o.Pred = true })
	}
}

// TestPredBoolsKeepsTestsOfRedefinedPredicates: a test of a bool word is left alone where the
// predicate it was selected from may have changed since (a definition after a label).
func TestPredBoolsKeepsTestsOfRedefinedPredicates(t *testing.T) {
	body := strings.Join([]string{
		"\tsetp.lt.f64 %p1, %fd1, %fd2;",
		"\tselp.f64 %fd3, 0d3FF0000000000000, 0d0000000000000000, %p1;",
		"\tsetp.neu.f64 %p2, %fd3, 0d0000000000000000;",
		"$L_x:",
		"\tsetp.gt.f64 %p1, %fd1, %fd2;",
		"\tsetp.neu.and.f64 %p4, %fd3, 0d0000000000000000, %p2;",
		"\tsetp.lt.f64 %p5, %fd1, %fd2;",
		"\tselp.f64 %fd5, 0d3FF0000000000000, 0d0000000000000000, %p5;",
		"\t@%p2 setp.eq.f64 %p6, %fd5, 0d0000000000000000;",
		"",
	}, "\n")
	got := strings.Split(ptx.PredBools(body), "\n")
	want := []string{
		"\tsetp.lt.f64 %p1, %fd1, %fd2;",
		"\tselp.f64 %fd3, 0d3FF0000000000000, 0d0000000000000000, %p1;",
		"\tsetp.neu.f64 %p2, %fd3, 0d0000000000000000;", // %p1 is also set after the label
		"$L_x:",
		"\tsetp.gt.f64 %p1, %fd1, %fd2;",
		"\tsetp.neu.and.f64 %p4, %fd3, 0d0000000000000000, %p2;",
		"\tsetp.lt.f64 %p5, %fd1, %fd2;",
		"\tselp.f64 %fd5, 0d3FF0000000000000, 0d0000000000000000, %p5;",
		"\t@%p2 not.pred %p6, %p5;",
		"",
	}
	if len(got) != len(want) {
		t.Fatalf("%d lines, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("line %d: %q, want %q", i, got[i], want[i])
		}
	}
}
