package cuda

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// narrowMem writes float32 values v twice into an interpreter memory: as the fused kernels'
// 8-byte words at wide, and as 4-byte floats at narrow (8-byte aligned), two to a word as the
// interpreter's memory holds them.
func narrowMem(mem map[uint64]uint64, v []float32, wide, narrow uint64) {
	for i, x := range v {
		mem[wide+uint64(8*i)] = math.Float64bits(float64(x))
		at := narrow + uint64(4*i)
		mem[at&^7] |= uint64(math.Float32bits(x)) << (8 * (at & 7))
	}
}

// narrowAt reads the 4-byte float at address at of an interpreter memory.
func narrowAt(mem map[uint64]uint64, at uint64) uint32 {
	return uint32(mem[at&^7] >> (8 * (at & 7)))
}

// narrowValues returns n float32 values of varied magnitudes and signs, zeros and a NaN
// excluded (the sums compare bits).
func narrowValues(r *rand.Rand, n int64) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(math.Ldexp(r.Float64()-0.4, r.IntN(30)-15))
	}
	return v
}

// TestNarrowInputsReadSameBits interprets fused kernels that read a float32 leaf stored in
// 4-byte floats (Node.Narrow, a float32 array persisted on the GPU) and the same kernels
// reading the same values as 8-byte words: every thread's partial (sums, Welford, max,
// unrolled passes, several slices, strided reads), every element of an elementwise result,
// those of a tiled a + b.T with both inputs narrow, and each kept element's partial reduction
// (both walks) have the same bits.
func TestNarrowInputsReadSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	const wide, narrow, out = 1 << 32, 1 << 40, 1 << 46
	f32 := expr.Float32
	in := Node{Kind: NInput, DType: f32}
	mul := Node{Kind: NBinary, Op: expr.OpMul, DType: f32, Args: [3]int{0, 1}}
	two := Node{Kind: NConst, DType: f32, Value: 2.5}
	for ci, c := range []struct {
		dims    []int64
		strides []int64
		off     int64
	}{
		{[]int64{37, 300}, []int64{300, 1}, 0},
		{[]int64{5, 1000}, []int64{2003, 2}, 7},
		{[]int64{1, 70001}, []int64{0, 1}, 3},
	} {
		span := c.off + 1
		for k, d := range c.dims {
			span += (d - 1) * c.strides[k]
		}
		mem := map[uint64]uint64{}
		narrowMem(mem, narrowValues(r, span), wide, narrow)
		task := heldTask(c.dims, []Map{{Off: c.off, Strides: c.strides}}, []uint64{wide}, []int64{span})
		for _, s := range []*Spec{
			{Rank: 2, Reduce: RSum, Nodes: []Node{in}},
			{Rank: 2, Reduce: RWelford, Nodes: []Node{in}},
			{Rank: 2, Reduce: RMax, Nodes: []Node{in}},
			{Rank: 2, Reduce: RSum, Nodes: []Node{in, two, mul}},
		} {
			ns, nts := narrowedTo(s, []Task{task}, wide, narrow, 4)
			for _, tk := range [][]Task{{task}, {collapsed(task)}} {
				want := fusedRun(t, s, tk, mem, out)
				ntk := nts
				if tk[0].Dims[0] != task.Dims[0] {
					ntk = []Task{collapsed(nts[0])}
				}
				got := fusedRun(t, ns, ntk, mem, out)
				if !samePartials(got, want) {
					t.Fatalf("case %d, %v: the narrow reads' partials differ from the wide reads'", ci, s.Reduce)
				}
			}
		}
		if span > 1<<14 {
			continue
		}
		// Elementwise: 2.5 * x, written as 8-byte words.
		s := &Spec{Rank: 2, Reduce: RNone, Nodes: []Node{in, two, mul}}
		ns, nts := narrowedTo(s, []Task{task}, wide, narrow, 4)
		m := task.Elements()
		fusedRun(t, s, []Task{task}, mem, out)
		want := make([]uint64, m)
		for e := range m {
			want[e] = mem[out+uint64(8*e)]
			delete(mem, out+uint64(8*e))
		}
		fusedRun(t, ns, nts, mem, out)
		for e := range m {
			if mem[out+uint64(8*e)] != want[e] {
				t.Fatalf("case %d: element %d of 2.5x is %v from narrow reads, %v from wide", ci, e, math.Float64frombits(mem[out+uint64(8*e)]), math.Float64frombits(want[e]))
			}
		}
	}

	// Tiled a + b.T, both narrow (b through the shared-memory tiles).
	dims := []int64{45, 70}
	n := dims[0] * dims[1]
	const bWide, bNarrow = wide + 1<<30, narrow + 1<<30
	mem := map[uint64]uint64{}
	narrowMem(mem, narrowValues(r, n), wide, narrow)
	narrowMem(mem, narrowValues(r, n), bWide, bNarrow)
	task := heldTask(dims, []Map{{Strides: []int64{dims[1], 1}}, {Strides: []int64{1, dims[0]}}}, []uint64{wide, bWide}, []int64{n, n})
	nodes := []Node{in, {Kind: NInput, DType: f32, Leaf: 1, Transposed: true}, {Kind: NBinary, Op: expr.OpAdd, DType: f32, Args: [3]int{0, 1}}}
	for _, red := range []Reduce{RNone, RSum} {
		s := &Spec{Rank: 2, Reduce: red, Tile: true, Nodes: nodes}
		ns := *s
		ns.Nodes = slices.Clone(nodes)
		ns.Nodes[0].Narrow, ns.Nodes[1].Narrow = true, true
		nt := task
		nt.Held = []HeldInput{{Ptr: narrow, Len: n, Narrow: true}, {Ptr: bNarrow, Len: n, Narrow: true}}
		want := fusedRun(t, s, []Task{task}, mem, out)
		var wantOut []uint64
		for e := range n {
			wantOut = append(wantOut, mem[out+uint64(8*e)])
			delete(mem, out+uint64(8*e))
		}
		got := fusedRun(t, &ns, []Task{nt}, mem, out)
		for e := range n {
			if red == RNone && mem[out+uint64(8*e)] != wantOut[e] {
				t.Fatalf("tiled a + b.T: element %d differs between narrow and wide reads", e)
			}
		}
		if red == RSum && !samePartials(got, want) {
			t.Fatalf("tiled sum of a + b.T: the narrow reads' partials differ")
		}
	}

	// Partial reductions, a thread per kept element and a warp per run.
	for _, rows := range []bool{false, true} {
		k, m := int64(3), int64(17000)
		mem := map[uint64]uint64{}
		narrowMem(mem, narrowValues(r, k*m), wide, narrow)
		s := &Spec{Rank: 2, Kept: 1, Rows: rows, Reduce: RSum, Nodes: []Node{in}}
		task := heldTask([]int64{k, m}, []Map{{Strides: []int64{m, 1}}}, []uint64{wide}, []int64{k * m})
		want := axesRun(t, s, task, mem)
		ns := *s
		ns.Nodes = []Node{{Kind: NInput, DType: f32, Narrow: true}}
		nt := heldTask([]int64{k, m}, []Map{{Strides: []int64{m, 1}}}, []uint64{narrow}, []int64{k * m})
		nt.Held[0].Narrow = true
		got := axesRun(t, &ns, nt, mem)
		for q := range k {
			if math.Float64bits(got.Values[q]) != math.Float64bits(want.Values[q]) {
				t.Fatalf("axis sum (rows %v) of kept %d: %v from narrow reads, %v from wide", rows, q, got.Values[q], want.Values[q])
			}
		}
	}
}

// TestNarrowOutputStoresFloat32 interprets an elementwise float32 kernel writing 4-byte floats
// (Spec.NarrowOut, how Persist keeps a float32 array): two tasks of odd element counts, each
// from an even element, every element the float32 the 8-byte kernel writes, and the padding
// element left alone.
func TestNarrowOutputStoresFloat32(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 34))
	const wide, out = 1 << 32, 1 << 46
	f32 := expr.Float32
	dims := []int64{7, 9}
	n := dims[0] * dims[1]
	v := narrowValues(r, n)
	mem := map[uint64]uint64{}
	narrowMem(mem, v, wide, 1<<40)
	task := heldTask(dims, []Map{{Strides: []int64{dims[1], 1}}}, []uint64{wide}, []int64{n})
	s := &Spec{Rank: 2, Reduce: RNone, Nodes: []Node{{Kind: NInput, DType: f32}, {Kind: NConst, DType: f32, Value: 1.0 / 3}, {Kind: NBinary, Op: expr.OpMul, DType: f32, Args: [3]int{0, 1}}}}
	if err := s.Validate(); err != nil {
		t.Fatal(err)
	}
	ns := *s
	ns.NarrowOut = true
	if err := ns.Validate(); err != nil {
		t.Fatal(err)
	}
	pad := out + 4*uint64(n) // the first task's padding element
	mem[pad&^7] = 77 << (8 * (pad & 7))
	fusedRun(t, &ns, []Task{task, task}, mem, out)
	for k := range int64(2) {
		base := out + uint64(4*k*(n+1)) // odd n: the second task starts at element n+1
		for e := range n {
			want := math.Float32bits(float32(float64(v[e]) * float64(float32(1.0/3))))
			if got := narrowAt(mem, base+uint64(4*e)); got != want {
				t.Fatalf("task %d, element %d: %#x, want %#x", k, e, got, want)
			}
		}
	}
	if narrowAt(mem, pad) != 77 {
		t.Fatalf("the padding element between the tasks was written")
	}
	bad := *s
	bad.Reduce = RSum
	bad.NarrowOut = true
	if err := bad.Validate(); err == nil {
		t.Fatalf("a sum with 4-byte output validated")
	}
}

// TestNarrowInputsMixTasks: a kernel whose leaf one task reads from a narrow held array and
// another from host data gets the host data as 4-byte floats, the same values; the cached spec
// is left alone; a leaf held narrow by one task and wide by another is refused.
func TestNarrowInputsMixTasks(t *testing.T) {
	s := &Spec{Rank: 1, Reduce: RSum, Nodes: []Node{{Kind: NInput, DType: expr.Float32}}}
	host := []float64{1.5, float64(float32(0.1)), -3}
	gts := []Task{
		{Dims: []int64{3}, Maps: []Map{{Strides: []int64{1}}}, Inputs: [][]float64{nil}, Held: []HeldInput{{Ptr: 1 << 20, Len: 3, Narrow: true}}},
		{Dims: []int64{3}, Maps: []Map{{Strides: []int64{1}}}, Inputs: [][]float64{host}},
	}
	ns, err := narrowInputs(s, gts)
	if err != nil {
		t.Fatal(err)
	}
	if !ns.Nodes[0].Narrow || s.Nodes[0].Narrow || ns.Key() == s.Key() {
		t.Fatalf("narrow spec %v, cached spec %v, keys %s %s", ns.Nodes[0].Narrow, s.Nodes[0].Narrow, ns.Key(), s.Key())
	}
	if gts[1].Inputs[0] != nil || len(gts[1].InputsNarrow) != 1 || !bytes.Equal(gts[1].InputsNarrow[0], dtype.OfFloat32([]float32{1.5, 0.1, -3}).Bytes()) {
		t.Fatalf("host data %v / %v", gts[1].Inputs, gts[1].InputsNarrow)
	}
	if err := gts[1].validate(ns); err != nil {
		t.Fatalf("the narrowed host task: %v", err)
	}
	same, err := narrowInputs(s, []Task{gts[1]})
	if err != nil || same != s {
		t.Fatalf("no narrow held data: spec %p (want %p), %v", same, s, err)
	}
	gts[1].Held = []HeldInput{{Ptr: 1 << 24, Len: 3}}
	if _, err := narrowInputs(s, gts); err == nil || !strings.Contains(err.Error(), "8-byte words") {
		t.Fatalf("a leaf held narrow and wide: %v", err)
	}
	f64 := &Spec{Rank: 1, Reduce: RSum, Nodes: []Node{{Kind: NInput, DType: expr.Float64}}}
	if _, err := narrowInputs(f64, gts[:1]); err == nil {
		t.Fatalf("a float64 leaf read from 4-byte floats")
	}
}

// TestEncodeNarrowRoundTrip: EncodeNarrow packs float32 values two to a word (an odd count's
// last half zero) and DecodeNarrow gives them back, bit for bit.
func TestEncodeNarrowRoundTrip(t *testing.T) {
	for _, n := range []int{0, 1, 2, 7} {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(i) - 2.75
		}
		if n > 2 {
			v[2] = float32(math.NaN())
		}
		w := EncodeNarrow(dtype.OfFloat32(v))
		if len(w) != (n+1)/2 {
			t.Fatalf("%d values in %d words", n, len(w))
		}
		if n%2 == 1 && math.Float64bits(w[len(w)-1])>>32 != 0 {
			t.Fatalf("%d values: padding %#x", n, math.Float64bits(w[len(w)-1]))
		}
		got := DecodeNarrow(w, n, dtype.Float32).Float32s()
		for i := range v {
			if math.Float32bits(got[i]) != math.Float32bits(v[i]) {
				t.Fatalf("%d values: element %d %v, want %v", n, i, got[i], v[i])
			}
		}
	}
}

// TestNarrowCountKernelReadsSameValues interprets the counting kernel of a bincount over a
// float32 leaf held in 4-byte floats (a histogram of a persisted float32 array, which reads
// the chunks in place) and over the same values in 8-byte words: the same counts, and a value
// out of range flagged the same way.
func TestNarrowCountKernelReadsSameValues(t *testing.T) {
	lib, err := ptxtest.Library()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(35, 36))
	const wide, narrow, out, bins = 1 << 32, 1 << 40, 1 << 46, 37
	dims := []int64{40, 1501}
	n := dims[0] * dims[1]
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(r.IntN(bins))
	}
	v[n-1] = bins // out of range: flagged
	mem := map[uint64]uint64{}
	narrowMem(mem, v, wide, narrow)
	task := heldTask(dims, []Map{{Strides: []int64{dims[1], 1}}}, []uint64{wide}, []int64{n})
	s := &Spec{Rank: 2, Reduce: RCount, Bins: bins, Nodes: []Node{{Kind: NInput, DType: expr.Float32}}}
	ns, nts := narrowedTo(s, []Task{task}, wide, narrow, 4)
	want := countRun(t, lib, s, []Task{task}, mem, out)
	got := countRun(t, lib, ns, nts, mem, out)
	if !slices.Equal(got[0], want[0]) || got[0][bins] != 1 {
		t.Fatalf("counts from 4-byte floats %v, from 8-byte words %v", got[0], want[0])
	}
}
