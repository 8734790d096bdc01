package cuda

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// TestLaneReductionKernelsInterpreted interprets the full-reduction kernels of integer and
// complex values on the host (package ptx/ptxtest): the integer partials, combined as collectLane
// does, are the exact wrapped sum, the signed or unsigned extreme and its first index; the
// complex sum has the bits of its fixed order (each thread in element order, a shuffle tree in
// each warp, warps 0..7 in order, slices pairwise).
func TestLaneReductionKernelsInterpreted(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 19))
	cases := []struct {
		dt   expr.DType
		red  Reduce
		dims []int64
	}{
		{expr.Int64, RSum, []int64{1, 140000}}, // three slices, wrapping
		{expr.Int16, RArgMax, []int64{3, 1001}},
		{expr.Int8, RArgMin, []int64{2, 900}},
		{expr.Uint64, RMin, []int64{2, 1300}},
		{expr.Uint32, RMax, []int64{1, 3000}},
		{expr.Uint64, RArgMax, []int64{1, 2000}},
		{expr.Complex128, RSum, []int64{2, 1500}},
	}
	const base, out = 1 << 32, 1 << 46
	for _, c := range cases {
		s := &Spec{Rank: len(c.dims), Reduce: c.red, Nodes: []Node{{Kind: NInput, DType: c.dt}}}
		m := c.dims[0] * c.dims[1]
		var words []float64
		if c.dt.IsComplex() {
			cs := make([]complex128, m)
			for i := range cs {
				cs[i] = complex(math.Ldexp(r.Float64()-0.4, r.IntN(30)), r.NormFloat64())
			}
			words = EncodeWords(dtype.OfComplex128(cs))
		} else {
			// Any int64 and its extremes; for the args few distinct values, so that the
			// extreme comes many times and the first index counts.
			vals := make([]int64, m)
			for i := range vals {
				vals[i] = []int64{int64(r.Uint64()), int64(r.IntN(5)) - 2, math.MaxInt64, math.MinInt64}[r.IntN(4)]
				if c.red == RArgMin || c.red == RArgMax {
					vals[i] = int64(r.IntN(5)) - 2
				}
			}
			words = EncodeWords(dtype.Convert(dtype.OfInt64(vals), c.dt)) // wrapped to the dtype
		}
		mem := map[uint64]uint64{}
		for i, v := range words {
			mem[base+uint64(8*i)] = math.Float64bits(v)
		}
		task := heldTask(c.dims, []Map{{Strides: []int64{c.dims[1], 1}}}, []uint64{base}, []int64{m})
		fusedRun(t, s, []Task{task}, mem, out)
		S := Slices(m)
		pw := s.PartialWords()
		got := make([]uint64, S*pw)
		for i := range got {
			got[i] = mem[out+uint64(8*i)]
		}
		res := newResult(s, 1)
		collectLane(s, res, 0, got, 0, S)
		if c.dt.IsComplex() {
			want := complexOrderSum(words, m, S)
			if math.Float64bits(res.Values[0]) != math.Float64bits(real(want)) || math.Float64bits(res.Imag[0]) != math.Float64bits(imag(want)) {
				t.Errorf("%v %v: %v%+vi, want %v", c.red, c.dt, res.Values[0], res.Imag[0], want)
			}
			continue
		}
		v, idx := intIdentity(s), int64(-1)
		for i := range m {
			x := int64(math.Float64bits(words[i]))
			v, idx = mergeInt(c.red, s.UnsignedAcc(), v, idx, x, func() int64 { return i })
		}
		if res.Ints[0] != v || (res.Index != nil && res.Index[0] != idx) {
			t.Errorf("%v of %v over %d elements (%d slices): %d at %v, want %d at %d", c.red, c.dt, m, S, res.Ints[0], res.Index, v, idx)
		}
	}
}

// complexOrderSum sums the m complex values in words in the kernel's order over S slices.
func complexOrderSum(words []float64, m int64, S int) complex128 {
	re, im := make([]float64, S), make([]float64, S)
	for b := range S {
		lo, hi := SliceRange(m, S, b)
		acc := make([]complex128, BlockSize)
		for tid := range acc {
			for e := lo + int64(tid); e < hi; e += BlockSize {
				acc[tid] += complex(words[2*e], words[2*e+1])
			}
		}
		var block complex128
		for wp := 0; wp < BlockSize; wp += 32 {
			lane := acc[wp : wp+32]
			for o := 16; o > 0; o >>= 1 {
				old := append([]complex128(nil), lane...)
				for l := 0; l < 32-o; l++ {
					lane[l] = old[l] + old[l+o]
				}
			}
			if wp == 0 {
				block = lane[0]
			} else {
				block += lane[0]
			}
		}
		re[b], im[b] = real(block), imag(block)
	}
	return complex(PairwiseSum(re), PairwiseSum(im))
}

// TestScanKernelsInterpreted interprets both scan walks on the host. A thread per line gives
// the sequential running values and totals bit for bit; segments chained on the host
// (chainSegments, as Device.scan does) give integers bit for bit and floats within
// 2*(n-1)*eps*sum|x| (sums) or 4*(n-1)*eps relative (products; complex ones to the modulus),
// on lines strided by inner.
func TestScanKernelsInterpreted(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 20))
	const outer, n, inner = 2, 700, 3
	const buf, tout, cin = 1 << 32, 1 << 40, 1 << 41
	for _, c := range []struct {
		dt expr.DType
		op expr.Op
	}{
		{expr.Int64, expr.OpMul}, {expr.Uint64, expr.OpAdd}, {expr.Float64, expr.OpAdd}, {expr.Float64, expr.OpMul},
		{expr.Complex128, expr.OpAdd}, {expr.Complex128, expr.OpMul}, {expr.Float32, expr.OpAdd},
	} {
		w := int64(Words(c.dt))
		total := int64(outer * n * inner)
		var x dtype.Slice
		switch {
		case c.dt.IsComplex():
			v := make([]complex128, total)
			for i := range v {
				v[i] = complex(1+r.NormFloat64()/100, r.NormFloat64()/100)
			}
			x = dtype.Convert(dtype.OfComplex128(v), c.dt)
		case c.dt.IsFloat():
			v := make([]float64, total)
			for i := range v {
				v[i] = 1 + r.NormFloat64()/50
			}
			x = dtype.Convert(dtype.OfFloat64(v), c.dt)
		default:
			v := make([]int64, total)
			for i := range v {
				v[i] = int64(r.Uint64()) | 1
			}
			x = dtype.Convert(dtype.OfInt64(v), c.dt)
		}
		words := EncodeWords(x)
		// The CPU's running values: each line in order with the kernel's op.
		want := make([]float64, len(words))
		copy(want, words)
		for o := range int64(outer) {
			for i := range int64(inner) {
				for k := int64(1); k < n; k++ {
					at, prev := ((o*n+k)*inner+i)*w, ((o*n+k-1)*inner+i)*w
					copy(want[at:at+w], hostScanOp(c.dt, c.op, want[prev:prev+w], want[at:at+w]))
				}
			}
		}
		load := func(mem map[uint64]uint64) {
			for i, v := range words {
				mem[buf+uint64(8*i)] = math.Float64bits(v)
			}
		}
		run := func(seg bool, params map[string]uint64, mem map[uint64]uint64, threads int64) {
			text, _, err := ptx.ScanPTX("8.0", "sm_90", c.dt, c.op, seg)
			if err != nil {
				t.Fatal(err)
			}
			p := ptxtest.Parse(t, text)
			for bx := range (threads + BlockSize - 1) / BlockSize {
				ptxtest.Run(t, p, int(bx), 0, params, mem, nil)
			}
		}
		// A thread per line.
		mem := map[uint64]uint64{}
		load(mem)
		run(false, map[string]uint64{"buf": buf, "outer": outer, "n": n, "inner": inner, "tot": tout, "last": 0}, mem, outer*inner)
		for i := range want {
			if got := mem[buf+uint64(8*i)]; got != math.Float64bits(want[i]) {
				t.Fatalf("%v %v, a thread per line: word %d is %v, want %v", c.dt, c.op, i, math.Float64frombits(got), want[i])
			}
		}
		for ln := range int64(outer * inner) {
			o, i := ln/inner, ln%inner
			for j := range w {
				if got, at := mem[tout+uint64(8*(ln*w+j))], ((o*n+n-1)*inner+i)*w+j; got != math.Float64bits(want[at]) {
					t.Fatalf("%v %v: line %d's total word %d is %v, want %v", c.dt, c.op, ln, j, math.Float64frombits(got), want[at])
				}
			}
		}
		// Totals only (a product along the axis): the buffer stays as it was.
		mem = map[uint64]uint64{}
		load(mem)
		run(false, map[string]uint64{"buf": buf, "outer": outer, "n": n, "inner": inner, "tot": tout, "last": 1}, mem, outer*inner)
		for i := range words {
			if mem[buf+uint64(8*i)] != math.Float64bits(words[i]) {
				t.Fatalf("%v %v: totals only changed word %d of the buffer", c.dt, c.op, i)
			}
		}
		for ln := range int64(outer * inner) {
			o, i := ln/inner, ln%inner
			for j := range w {
				if got, at := mem[tout+uint64(8*(ln*w+j))], ((o*n+n-1)*inner+i)*w+j; got != math.Float64bits(want[at]) {
					t.Fatalf("%v %v, totals only: line %d's word %d is %v, want %v", c.dt, c.op, ln, j, math.Float64frombits(got), want[at])
				}
			}
		}
		// Segments: totals, chained on the host, then the scan from the carries.
		const segs = 9
		mem = map[uint64]uint64{}
		load(mem)
		nseg := int64(outer * inner * segs)
		run(true, map[string]uint64{"buf": buf, "outer": outer, "n": n, "inner": inner, "segs": segs, "cin": 0, "tout": tout, "store": 0}, mem, nseg*32)
		tots := make([]float64, nseg*w)
		for i := range tots {
			tots[i] = math.Float64frombits(mem[tout+uint64(8*i)])
		}
		carries, _ := chainSegments(c.dt, c.op, tots, outer*inner, segs)
		for i, v := range carries {
			mem[cin+uint64(8*i)] = math.Float64bits(v)
		}
		run(true, map[string]uint64{"buf": buf, "outer": outer, "n": n, "inner": inner, "segs": segs, "cin": cin, "tout": 0, "store": 1}, mem, nseg*32)
		eps := 0x1p-52
		if c.dt == expr.Float32 {
			eps = 0x1p-23
		}
		for o := range int64(outer) {
			for i := range int64(inner) {
				var abs [2]float64
				for k := range int64(n) {
					for j := range w {
						at := ((o*n+k)*inner+i)*w + j
						got, exact := math.Float64frombits(mem[buf+uint64(8*at)]), want[at]
						abs[j] += math.Abs(words[at])
						if ptx.LaneOf(c.dt) == ptx.LaneI {
							if math.Float64bits(got) != math.Float64bits(exact) {
								t.Fatalf("%v %v, segments: element %d of line (%d, %d) is %d, want %d", c.dt, c.op, k, o, i, int64(math.Float64bits(got)), int64(math.Float64bits(exact)))
							}
							continue
						}
						bound := 2 * float64(k) * eps * abs[j]
						if c.op == expr.OpMul { // relative to the value (its modulus for complex ones)
							first := ((o*n+k)*inner + i) * w
							bound = 4 * float64(k) * eps * math.Hypot(want[first], want[first+w-1])
						}
						if math.Abs(got-exact) > bound {
							t.Fatalf("%v %v, segments: element %d of line (%d, %d) part %d is %v, want %v (bound %v)", c.dt, c.op, k, o, i, j, got, exact, bound)
						}
					}
				}
			}
		}
	}
}

// axesRun interprets the partial-reduction kernel of s (Kept > 0) over one task whose leaves
// read buffers held in mem, as launchAxes launches it, and returns the task's partials
// combined as the host combines them (collectAxes).
func axesRun(t *testing.T, s *Spec, task Task, mem map[uint64]uint64) Partial {
	t.Helper()
	words, k, sl := axesRunWords(t, s, task, mem)
	return collectAxes(s, words, 0, k, sl)
}

// axesRunWords is axesRun before the host's combine: the partials' words, the task's kept
// element count and its slices per kept element.
func axesRunWords(t *testing.T, s *Spec, task Task, mem map[uint64]uint64) ([]uint64, int64, int64) {
	t.Helper()
	lib, err := ptxtest.Library()
	if err != nil {
		t.Fatal(err)
	}
	text, _, err := GeneratePTX(s, lib)
	if err != nil {
		t.Fatal(err)
	}
	p := ptxtest.Parse(t, text)
	R, L := s.Rank, s.Leaves()
	k, n := axesShape(s, &task)
	sl := axesSlices(s, k, n)
	gridX := axesGridX(s, k, sl)
	const desc, out = 1 << 44, 1 << 46
	w := make([]uint64, ptx.AxesDescWords(R, L))
	for j, d := range task.Dims {
		w[j] = uint64(d)
	}
	w[R], w[R+1], w[R+2], w[R+3] = uint64(k), uint64(n), uint64(sl), 0
	for l := range L {
		b := w[R+4+l*(R+2):]
		b[0], b[1] = leafWord(s, &task, l), uint64(task.Maps[l].Off)
		for j, st := range task.Maps[l].Strides {
			b[2+j] = uint64(st)
		}
	}
	for j, v := range w {
		mem[desc+uint64(8*j)] = v
	}
	for bx := range gridX {
		ptxtest.Run(t, p, int(bx), 0, map[string]uint64{"desc": desc, "out": out, "nctaid.x": uint64(gridX)}, mem, nil)
	}
	words := make([]uint64, k*sl*int64(s.PartialWords()))
	for i := range words {
		v, ok := mem[out+uint64(8*i)]
		if !ok {
			t.Fatalf("partial word %d of %d unwritten", i, len(words))
		}
		words[i] = v
	}
	return words, k, sl
}

// TestLaneAxesKernelsInterpreted interprets the partial-reduction kernels of integer and
// complex values on the host, in both walks (a thread per kept element and slice, eight warps
// merged through shared memory; a warp per run, merged by shuffles), over several slices: each
// kept element's integer result and first index are exact, its complex sum within 1e-13 of
// the sequential one.
func TestLaneAxesKernelsInterpreted(t *testing.T) {
	r := rand.New(rand.NewPCG(20, 21))
	const base = 1 << 32
	for _, c := range []struct {
		dt   expr.DType
		red  Reduce
		rows bool
		k, n int64
	}{
		{expr.Int64, RSum, false, 3, 5000}, {expr.Int16, RArgMax, false, 3, 5000}, {expr.Uint64, RMin, false, 33, 2100},
		{expr.Int32, RSum, true, 3, 20000}, {expr.Uint8, RArgMin, true, 2, 17000}, {expr.Int64, RMax, true, 3, 17000},
		{expr.Complex128, RSum, false, 3, 5000}, {expr.Complex64, RSum, true, 2, 17000},
	} {
		s := &Spec{Rank: 2, Kept: 1, Rows: c.rows, Reduce: c.red, Nodes: []Node{{Kind: NInput, DType: c.dt}}}
		m := c.k * c.n
		var words []float64
		if c.dt.IsComplex() {
			cs := make([]complex128, m)
			for i := range cs {
				cs[i] = complex(r.NormFloat64()*100, r.NormFloat64())
			}
			words = EncodeWords(dtype.Convert(dtype.OfComplex128(cs), c.dt))
		} else {
			vals := make([]int64, m)
			for i := range vals {
				vals[i] = []int64{int64(r.Uint64()), math.MaxInt64, math.MinInt64}[r.IntN(3)]
				if c.red == RArgMin || c.red == RArgMax {
					vals[i] = int64(r.IntN(5)) - 2
				}
			}
			words = EncodeWords(dtype.Convert(dtype.OfInt64(vals), c.dt))
		}
		mem := map[uint64]uint64{}
		for i, v := range words {
			mem[base+uint64(8*i)] = math.Float64bits(v)
		}
		// Kept axis first, reduced second; the buffer is row-major (kept, reduced).
		task := heldTask([]int64{c.k, c.n}, []Map{{Strides: []int64{c.n, 1}}}, []uint64{base}, []int64{m})
		p := axesRun(t, s, task, mem)
		for q := range c.k {
			if c.dt.IsComplex() {
				var want complex128
				for e := range c.n {
					at := 2 * (q*c.n + e)
					want += complex(words[at], words[at+1])
				}
				if math.Abs(p.Values[q]-real(want)) > 1e-13*math.Abs(real(want))+1e-9 || math.Abs(p.Imag[q]-imag(want)) > 1e-13*math.Abs(imag(want))+1e-9 {
					t.Errorf("%v sum (rows %v) of kept %d: %v%+vi, want %v", c.dt, c.rows, q, p.Values[q], p.Imag[q], want)
				}
				continue
			}
			v, idx := intIdentity(s), int64(-1)
			for e := range c.n {
				x := int64(math.Float64bits(words[q*c.n+e]))
				v, idx = mergeInt(c.red, s.UnsignedAcc(), v, idx, x, func() int64 { return e })
			}
			if p.Ints[q] != v || (p.Index != nil && p.Index[q] != idx) {
				t.Errorf("%v of %v (rows %v) of kept %d: %d at %v, want %d at %d", c.red, c.dt, c.rows, q, p.Ints[q], p.Index, v, idx)
			}
		}
	}
}
