package cuda

import (
	"bytes"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// narrowIntDTypes are the dtypes other than float32 that a GPU keeps in their own size.
var narrowIntDTypes = []dtype.DType{dtype.Bool, dtype.Int8, dtype.Int16, dtype.Int32, dtype.Uint8, dtype.Uint16, dtype.Uint32}

// intRange is the smallest and largest value of integer (or bool) dtype dt.
func intRange(dt dtype.DType) (lo, hi int64) {
	if dt == dtype.Bool {
		return 0, 1
	}
	bits := 8 * dt.Size()
	if dt.Kind() == dtype.KindUint {
		return 0, 1<<bits - 1
	}
	return -1 << (bits - 1), 1<<(bits-1) - 1
}

// narrowIntValues returns n values of dt over its whole range, its minimum first and its
// maximum last (the values a missing sign or zero extension gets wrong).
func narrowIntValues(r *rand.Rand, dt dtype.DType, n int64) dtype.Slice {
	lo, hi := intRange(dt)
	v := make([]int64, n)
	for i := range v {
		v[i] = lo + int64(r.Uint64N(uint64(hi-lo)+1))
	}
	v[0], v[n-1] = lo, hi
	return dtype.Convert(dtype.OfInt64(v), dt)
}

// narrowIntMem writes s into an interpreter memory twice: as the fused kernels' 8-byte words
// (EncodeWords) at wide, and in its own element size (EncodeNarrow, as a GPU keeps it) at
// narrow, 8-byte aligned.
func narrowIntMem(mem map[uint64]uint64, s dtype.Slice, wide, narrow uint64) {
	for i, w := range EncodeWords(s) {
		mem[wide+uint64(8*i)] = math.Float64bits(w)
	}
	for i, w := range EncodeNarrow(s) {
		mem[narrow+uint64(8*i)] = math.Float64bits(w)
	}
}

// narrowedTo returns s with its input nodes Narrow, and tasks reading the narrow buffers of
// elements of size bytes: each held pointer moved from the wide buffer to the same element
// of the narrow one.
func narrowedTo(s *Spec, tasks []Task, wide, narrow uint64, size int) (*Spec, []Task) {
	c := *s
	c.Nodes = slices.Clone(s.Nodes)
	for i := range c.Nodes {
		if c.Nodes[i].Kind == NInput {
			c.Nodes[i].Narrow = true
		}
	}
	ts := make([]Task, len(tasks))
	for i, t := range tasks {
		t.Held = slices.Clone(t.Held)
		for l := range t.Held {
			t.Held[l].Ptr = driver.DevicePtr(narrow + (uint64(t.Held[l].Ptr)-wide)/8*uint64(size))
			t.Held[l].Narrow = true
		}
		ts[i] = t
	}
	return &c, ts
}

// takeOut removes from mem, and returns, the words at or above out (what a kernel wrote).
func takeOut(mem map[uint64]uint64, out uint64) map[uint64]uint64 {
	m := map[uint64]uint64{}
	for a, w := range mem {
		if a >= out {
			m[a] = w
			delete(mem, a)
		}
	}
	return m
}

func samePartials(a, b [][][][]uint64) bool {
	return slices.EqualFunc(a, b, func(x, y [][][]uint64) bool {
		return slices.EqualFunc(x, y, func(p, q [][]uint64) bool { return slices.EqualFunc(p, q, slices.Equal) })
	})
}

// TestNarrowIntInputsReadSameBits interprets fused kernels reading bools and integers of 1, 2
// and 4 bytes held in their own size (Node.Narrow: such an array persisted on the GPU) and
// the same kernels reading 8-byte words: each dtype's minimum and maximum among the values,
// sums of the values as int64 and maxima (every thread's partial), an elementwise int64 cast
// whose words must be the values themselves (sign extension of signed types, zero extension
// of unsigned ones, 0 and 1 for bools), a wrapping product in the dtype, plain, strided and
// offset reads, merged dims, and partial reductions in both walks.
func TestNarrowIntInputsReadSameBits(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	const wide, narrow, out = 1 << 32, 1 << 40, 1 << 46
	for _, dt := range narrowIntDTypes {
		in := Node{Kind: NInput, DType: dt}
		wide64 := Node{Kind: NCast, DType: expr.Int64, Args: [3]int{0}}
		k := Node{Kind: NConst, DType: dt, Value: 3}
		if dt == dtype.Bool {
			k.Value = 1
		}
		mul := Node{Kind: NBinary, Op: expr.OpMul, DType: dt, Args: [3]int{0, 1}}
		for ci, c := range []struct {
			dims    []int64
			strides []int64
			off     int64
		}{
			{[]int64{37, 300}, []int64{300, 1}, 0},
			{[]int64{5, 900}, []int64{1803, 2}, 7},
			{[]int64{1, 20001}, []int64{0, 1}, 3},
		} {
			span := c.off + 1
			for j, d := range c.dims {
				span += (d - 1) * c.strides[j]
			}
			mem := map[uint64]uint64{}
			vals := narrowIntValues(r, dt, span)
			narrowIntMem(mem, vals, wide, narrow)
			task := heldTask(c.dims, []Map{{Off: c.off, Strides: c.strides}}, []uint64{wide}, []int64{span})
			for _, s := range []*Spec{
				{Rank: 2, Reduce: RSum, Nodes: []Node{in, wide64}},
				{Rank: 2, Reduce: RMax, Nodes: []Node{in, wide64}},
				{Rank: 2, Reduce: RSum, Nodes: []Node{in, k, mul, {Kind: NCast, DType: expr.Int64, Args: [3]int{2}}}},
			} {
				ns, nts := narrowedTo(s, []Task{task}, wide, narrow, dt.Size())
				for _, tk := range [][]Task{{task}, {collapsed(task)}} {
					want := fusedRun(t, s, tk, mem, out)
					wantOut := takeOut(mem, out)
					ntk := nts
					if tk[0].Dims[0] != task.Dims[0] {
						ntk = []Task{collapsed(nts[0])}
					}
					got := fusedRun(t, ns, ntk, mem, out)
					if gotOut := takeOut(mem, out); !samePartials(got, want) || !maps.Equal(gotOut, wantOut) || len(wantOut) == 0 {
						t.Fatalf("%v, case %d, %v: the narrow reads' partials differ from the wide reads' (%d and %d words written)", dt, ci, s.Reduce, len(gotOut), len(wantOut))
					}
				}
			}
			// Elementwise int64(x): the value, whatever the width it was read in.
			s := &Spec{Rank: 2, Reduce: RNone, Nodes: []Node{in, wide64}}
			ns, nts := narrowedTo(s, []Task{task}, wide, narrow, dt.Size())
			fusedRun(t, ns, nts, mem, out)
			v := dtype.Convert(vals, dtype.Int64).Int64s()
			e := 0
			for i := range c.dims[0] {
				for j := range c.dims[1] {
					src := c.off + i*c.strides[0] + j*c.strides[1]
					if got := int64(mem[out+uint64(8*e)]); got != v[src] {
						t.Fatalf("%v, case %d: int64 of element %d read narrow is %d, want %d", dt, ci, src, got, v[src])
					}
					e++
				}
			}
			// Elementwise x*3 in dt (wrapping) as 8-byte words: the same from both reads.
			s = &Spec{Rank: 2, Reduce: RNone, Nodes: []Node{in, k, mul}}
			ns, nts = narrowedTo(s, []Task{task}, wide, narrow, dt.Size())
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
					t.Fatalf("%v, case %d: element %d of x*3 is %#x from narrow reads, %#x from wide", dt, ci, e, mem[out+uint64(8*e)], want[e])
				}
			}
		}

		// Partial reductions (sums as int64), a thread per kept element and a warp per run.
		for _, rows := range []bool{false, true} {
			kk, m := int64(3), int64(9000)
			mem := map[uint64]uint64{}
			narrowIntMem(mem, narrowIntValues(r, dt, kk*m), wide, narrow)
			s := &Spec{Rank: 2, Kept: 1, Rows: rows, Reduce: RSum, Nodes: []Node{in, wide64}}
			task := heldTask([]int64{kk, m}, []Map{{Strides: []int64{m, 1}}}, []uint64{wide}, []int64{kk * m})
			want := axesRun(t, s, task, mem)
			ns, nts := narrowedTo(s, []Task{task}, wide, narrow, dt.Size())
			got := axesRun(t, ns, nts[0], mem)
			if !slices.Equal(got.Ints, want.Ints) || len(got.Ints) != int(kk) {
				t.Fatalf("%v: axis sums (rows %v) %v from narrow reads, %v from wide", dt, rows, got.Ints, want.Ints)
			}
		}
	}
}

// TestNarrowIntTiledReads interprets the tiled kernel of a + b.T (b through shared memory)
// with both inputs int16 or uint8 held in their own size: every element, and every partial
// of its sum as float64, the same as from 8-byte words, and the elements written in their
// own size (NarrowOut) the low bytes of those words.
func TestNarrowIntTiledReads(t *testing.T) {
	r := rand.New(rand.NewPCG(43, 44))
	const wide, narrow, out = 1 << 32, 1 << 40, 1 << 46
	const bWide, bNarrow = wide + 1<<30, narrow + 1<<30
	for _, dt := range []dtype.DType{dtype.Int16, dtype.Uint8} {
		dims := []int64{45, 70}
		n := dims[0] * dims[1]
		mem := map[uint64]uint64{}
		narrowIntMem(mem, narrowIntValues(r, dt, n), wide, narrow)
		narrowIntMem(mem, narrowIntValues(r, dt, n), bWide, bNarrow)
		task := heldTask(dims, []Map{{Strides: []int64{dims[1], 1}}, {Strides: []int64{1, dims[0]}}}, []uint64{wide, bWide}, []int64{n, n})
		nodes := []Node{{Kind: NInput, DType: dt}, {Kind: NInput, DType: dt, Leaf: 1, Transposed: true}, {Kind: NBinary, Op: expr.OpAdd, DType: dt, Args: [3]int{0, 1}}}
		sum := append(slices.Clone(nodes), Node{Kind: NCast, DType: expr.Float64, Args: [3]int{2}}) // tiled sums are of floats
		for _, s := range []*Spec{{Rank: 2, Reduce: RNone, Tile: true, Nodes: nodes}, {Rank: 2, Reduce: RSum, Tile: true, Nodes: sum}} {
			ns := *s
			ns.Nodes = slices.Clone(s.Nodes)
			ns.Nodes[0].Narrow, ns.Nodes[1].Narrow = true, true
			nt := task
			nt.Held = []HeldInput{{Ptr: narrow, Len: n, Narrow: true}, {Ptr: bNarrow, Len: n, Narrow: true}}
			want := fusedRun(t, s, []Task{task}, mem, out)
			wantOut := takeOut(mem, out)
			got := fusedRun(t, &ns, []Task{nt}, mem, out)
			gotOut := takeOut(mem, out)
			if s.Reduce == RNone && (!maps.Equal(gotOut, wantOut) || len(wantOut) != int(n)) {
				t.Fatalf("%v: tiled a + b.T: the elements differ between narrow and wide reads", dt)
			}
			if s.Reduce == RSum && (!samePartials(got, want) || !maps.Equal(gotOut, wantOut)) {
				t.Fatalf("%v: tiled sum of a + b.T: the narrow reads' partials differ", dt)
			}
			if s.Reduce != RNone {
				continue
			}
			// Written narrow too (a persisted a + b.T): each element the low bytes of the word.
			ns.NarrowOut = true
			fusedRun(t, &ns, []Task{nt}, mem, out)
			size := uint64(dt.Size())
			for e := range uint64(n) {
				at := out + size*e
				w := wantOut[out+8*e] & (1<<(8*size) - 1)
				if got := mem[at&^7] >> (8 * (at & 7)) & (1<<(8*size) - 1); got != w {
					t.Fatalf("%v: tiled a + b.T written narrow: element %d is %#x, want %#x", dt, e, got, w)
				}
			}
			takeOut(mem, out)
		}
	}
}

// TestNarrowIntOutputStores interprets elementwise kernels writing bools and integers in
// their own size (Spec.NarrowOut, how Persist keeps such an array): x*3 wrapped to the dtype
// (x and 1 for bools), read narrow too, for two tasks of element counts that are no multiple
// of 8 bytes' worth, each from an 8-byte aligned element; every element is the low bytes of
// the word the 8-byte kernel writes, and the padding between the tasks is left alone.
func TestNarrowIntOutputStores(t *testing.T) {
	r := rand.New(rand.NewPCG(45, 46))
	const wide, narrow, out = 1 << 32, 1 << 40, 1 << 46
	const wideOut = 1 << 47
	for _, dt := range narrowIntDTypes {
		dims := []int64{7, 9}
		n := dims[0] * dims[1]
		mem := map[uint64]uint64{}
		vals := narrowIntValues(r, dt, n)
		narrowIntMem(mem, vals, wide, narrow)
		task := heldTask(dims, []Map{{Strides: []int64{dims[1], 1}}}, []uint64{wide}, []int64{n})
		k := Node{Kind: NConst, DType: dt, Value: 3}
		if dt == dtype.Bool {
			k.Value = 1
		}
		s := &Spec{Rank: 2, Reduce: RNone, Nodes: []Node{{Kind: NInput, DType: dt}, k, {Kind: NBinary, Op: expr.OpMul, DType: dt, Args: [3]int{0, 1}}}}
		fusedRun(t, s, []Task{task}, mem, wideOut)
		ns, nts := narrowedTo(s, []Task{task, task}, wide, narrow, dt.Size())
		ns.NarrowOut = true
		if err := ns.Validate(); err != nil {
			t.Fatal(err)
		}
		size := uint64(dt.Size())
		a := uint64(narrowAlign(dt))
		second := (uint64(n) + a - 1) / a * a // the second task's first element
		pad := out + size*uint64(n)           // the first task's padding
		mem[pad&^7] |= 0x5a << (8 * (pad & 7))
		fusedRun(t, ns, nts, mem, out)
		mask := uint64(1)<<(8*size) - 1
		for task := range uint64(2) {
			base := out + size*task*second
			for e := range uint64(n) {
				w := mem[wideOut+8*e]
				if dt == dtype.Bool {
					w = uint64(math.Float64frombits(w)) // 0 or 1
				}
				at := base + size*e
				if got := mem[at&^7] >> (8 * (at & 7)) & mask; got != w&mask {
					t.Fatalf("%v: task %d, element %d: %#x, want %#x", dt, task, e, got, w&mask)
				}
			}
		}
		if mem[pad&^7]>>(8*(pad&7))&0xff != 0x5a {
			t.Fatalf("%v: the padding after the first task was written", dt)
		}
		// What Persist keeps, read back: DecodeNarrow of the first task's words.
		words := make([]float64, (size*uint64(n)+7)/8)
		for i := range words {
			words[i] = math.Float64frombits(mem[out+uint64(8*i)])
		}
		back := DecodeNarrow(words, int(n), dt)
		wantVals := DecodeWords(wordsAt(mem, wideOut, n), dt)
		if !dtype.Equal(back, wantVals) {
			t.Fatalf("%v: the stored elements decode to %v, want %v", dt, back.Any(), wantVals.Any())
		}
	}
	bad := &Spec{Rank: 1, Reduce: RNone, NarrowOut: true, Nodes: []Node{{Kind: NInput, DType: expr.Int64}}}
	if err := bad.Validate(); err == nil {
		t.Fatalf("an int64 kernel with narrow output validated")
	}
}

func wordsAt(mem map[uint64]uint64, at uint64, n int64) []float64 {
	w := make([]float64, n)
	for i := range w {
		w[i] = math.Float64frombits(mem[at+uint64(8*i)])
	}
	return w
}

// TestNarrowIntHostData: a leaf that one task reads from int16 elements held on the GPU and
// another from host words gets the host data as int16 elements (the same values, negative
// ones included), and EncodeNarrow and DecodeNarrow round-trip every narrow dtype with the
// last word's unused bytes zero.
func TestNarrowIntHostData(t *testing.T) {
	s := &Spec{Rank: 1, Reduce: RSum, Nodes: []Node{{Kind: NInput, DType: expr.Int16}, {Kind: NCast, DType: expr.Int64, Args: [3]int{0}}}}
	host := dtype.Convert(dtype.OfInt64([]int64{-32768, 5, 32767}), dtype.Int16)
	gts := []Task{
		{Dims: []int64{3}, Maps: []Map{{Strides: []int64{1}}}, Inputs: [][]float64{nil}, Held: []HeldInput{{Ptr: 1 << 20, Len: 3, Narrow: true}}},
		{Dims: []int64{3}, Maps: []Map{{Strides: []int64{1}}}, Inputs: [][]float64{EncodeWords(host)}},
	}
	ns, err := narrowInputs(s, gts)
	if err != nil {
		t.Fatal(err)
	}
	if !ns.Nodes[0].Narrow || s.Nodes[0].Narrow {
		t.Fatalf("narrow spec %v, cached spec %v", ns.Nodes[0].Narrow, s.Nodes[0].Narrow)
	}
	if gts[1].Inputs[0] != nil || !bytes.Equal(gts[1].InputsNarrow[0], host.Bytes()) {
		t.Fatalf("host data %v / %v, want the bytes %v", gts[1].Inputs, gts[1].InputsNarrow, host.Bytes())
	}
	if err := gts[1].validate(ns); err != nil {
		t.Fatalf("the narrowed host task: %v", err)
	}
	r := rand.New(rand.NewPCG(47, 48))
	for _, dt := range append([]dtype.DType{dtype.Float32}, narrowIntDTypes...) {
		if !Narrow(dt) {
			t.Fatalf("%v is not kept narrow", dt)
		}
		for _, n := range []int64{1, 3, 8, 13} {
			v := dtype.OfFloat32(narrowValues(r, n))
			if dt != dtype.Float32 {
				v = narrowIntValues(r, dt, n)
			}
			w := EncodeNarrow(v)
			used := n * int64(dt.Size())
			if int64(len(w)) != (used+7)/8 {
				t.Fatalf("%v: %d values in %d words", dt, n, len(w))
			}
			if rest := used % 8; rest != 0 && math.Float64bits(w[len(w)-1])>>(8*rest) != 0 {
				t.Fatalf("%v: %d values: padding %#x", dt, n, math.Float64bits(w[len(w)-1]))
			}
			if back := DecodeNarrow(w, int(n), dt); !dtype.Equal(back, v) {
				t.Fatalf("%v: %v decodes to %v", dt, v.Any(), back.Any())
			}
		}
	}
	for _, dt := range []dtype.DType{dtype.Float64, dtype.Int64, dtype.Uint64, dtype.Complex64, dtype.Complex128} {
		if Narrow(dt) {
			t.Fatalf("%v is kept narrow", dt)
		}
	}
}

// TestNarrowIntCountKernelReadsSameValues interprets the counting kernel of a bincount over an
// int32 and a uint8 leaf (cast to float64, as the planner gives it) held in their own size
// (a histogram of a persisted integer array) and over the same values in 8-byte words: the
// same counts, and values out of range (a negative one included) flagged the same way.
func TestNarrowIntCountKernelReadsSameValues(t *testing.T) {
	lib, err := ptxtest.Library()
	if err != nil {
		t.Fatal(err)
	}
	r := rand.New(rand.NewPCG(49, 50))
	const wide, narrow, out, bins = 1 << 32, 1 << 40, 1 << 46, 37
	for _, dt := range []dtype.DType{dtype.Int32, dtype.Uint8} {
		dims := []int64{40, 1501}
		n := dims[0] * dims[1]
		v := make([]int64, n)
		for i := range v {
			v[i] = int64(r.IntN(bins))
		}
		v[n-1] = bins // out of range: flagged
		if dt == dtype.Int32 {
			v[n-2] = -1
		}
		mem := map[uint64]uint64{}
		narrowIntMem(mem, dtype.Convert(dtype.OfInt64(v), dt), wide, narrow)
		task := heldTask(dims, []Map{{Strides: []int64{dims[1], 1}}}, []uint64{wide}, []int64{n})
		s := &Spec{Rank: 2, Reduce: RCount, Bins: bins, Nodes: []Node{{Kind: NInput, DType: dt}, {Kind: NCast, DType: expr.Float64, Args: [3]int{0}}}}
		ns, nts := narrowedTo(s, []Task{task}, wide, narrow, dt.Size())
		want := countRun(t, lib, s, []Task{task}, mem, out)
		got := countRun(t, lib, ns, nts, mem, out)
		if !slices.Equal(got[0], want[0]) || got[0][bins] != 1 {
			t.Fatalf("%v: counts from narrow elements %v, from 8-byte words %v", dt, got[0], want[0])
		}
	}
}

// TestBoolToIntCastsConvertNoFloats: a cast of bools to an integer type reads a narrow bool's
// byte (cvt.u64.u16) and an 8-byte bool's truth (selp), never a float-to-integer conversion
// (a bool sum, a cast to int64, spent about half its time in them); the values are checked
// by TestNarrowIntInputsReadSameBits. Kernels of bools and 1- or 2-byte integers held narrow
// take smallUnroll elements per pass.
func TestBoolToIntCastsConvertNoFloats(t *testing.T) {
	lib, err := ptxtest.Library()
	if err != nil {
		t.Fatal(err)
	}
	for _, narrow := range []bool{false, true} {
		s := &Spec{Rank: 1, Reduce: RSum, Nodes: []Node{{Kind: NInput, DType: expr.Bool, Narrow: narrow}, {Kind: NCast, DType: expr.Int64, Args: [3]int{0}}}}
		text, _, err := GeneratePTX(s, lib)
		if err != nil {
			t.Fatal(err)
		}
		body := text[strings.Index(text, ".entry"):]
		if strings.Contains(body, "cvt.rzi") {
			t.Errorf("narrow %v: a float-to-integer conversion in a bool-to-int64 cast", narrow)
		}
		want := map[bool]string{false: "selp.b64", true: "cvt.u64.u16"}[narrow]
		if !strings.Contains(body, want) {
			t.Errorf("narrow %v: no %s", narrow, want)
		}
		if u := ptx.UnrollOf(s); narrow && u != ptx.CurrentOptions().SmallUnroll || !narrow && u != ptx.UnrollLoads {
			t.Errorf("narrow %v: %d elements per pass", narrow, u)
		}
	}
}
