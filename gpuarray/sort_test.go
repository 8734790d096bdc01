package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// sortInput returns a chunked array with ties, NaNs and signed zeros, and its NumPy input.
func sortInput(rs *rand.Rand, shape []int) (*Array, input) {
	_, in := randArray(rs, "x", shape)
	for i := range in.data {
		switch rs.IntN(12) {
		case 0:
			in.data[i] = math.NaN()
		case 1:
			in.data[i] = math.Copysign(0, -1)
		case 2:
			in.data[i] = 0
		case 3:
			in.data[i] = math.Round(in.data[i]) // more ties
		}
	}
	return FromSlice(in.data, Shape(shape...), ChunkSizes(npChunks(rs, shape)...)), in
}

// sortCases returns random cases of Sort, Argsort, TopK and ArgTopK against NumPy's stable
// sort (descending as the Array API standard defines it: flip, stable sort, flip).
func sortCases(seed uint64, n int) []check {
	rs := rand.New(rand.NewPCG(seed, 11))
	var cs []check
	for i := 0; i < n; i++ {
		shape := npShape(rs, 1+rs.IntN(3), 1, 9)
		x, in := sortInput(rs, shape)
		r := len(shape)
		axis := rs.IntN(r) - r*rs.IntN(2) // sometimes negative
		ax := (axis + r) % r
		m := shape[ax]
		what := func(f string) string {
			return fmt.Sprintf("%s(shape %v, chunks %v, axis %d)", f, shape, x.Chunks(), axis)
		}
		flipSort := fmt.Sprintf("np.flip(np.sort(np.flip(x, %d), axis=%d, kind='stable'), %d)", axis, axis, axis)
		flipArg := fmt.Sprintf("%d - np.flip(np.argsort(np.flip(x, %d), axis=%d, kind='stable'), %d)", m-1, axis, axis, axis)
		clean := make([]float64, len(in.data))
		for j, v := range in.data {
			if v == v {
				clean[j] = v
			}
		}
		xi := FromSlice(clean, Shape(shape...), ChunkSizes(x.Chunks()...)).AsType(Int64) // a fused cast: sorted in int64
		cs = append(cs,
			check{what: what("Sort"), got: Sort(x, axis), code: fmt.Sprintf("np.sort(x, axis=%d, kind='stable')", axis), inputs: []input{in}},
			check{what: what("Sort descending"), got: Sort(x, axis, Descending()), code: flipSort, inputs: []input{in}},
			check{what: what("Argsort"), got: Argsort(x, axis), code: fmt.Sprintf("np.argsort(x, axis=%d, kind='stable')", axis), inputs: []input{in}},
			check{what: what("Argsort descending"), got: x.Argsort(axis, Descending()), code: flipArg, inputs: []input{in}},
			check{what: what("Sort int64"), got: xi.Sort(axis), code: fmt.Sprintf("np.sort(np.nan_to_num(x).astype(np.int64), axis=%d)", axis), inputs: []input{in}},
			check{what: what("Argsort int64 descending"), got: Argsort(xi, axis, Descending()), code: strings.ReplaceAll(flipArg, "np.flip(x,", "np.flip(np.nan_to_num(x).astype(np.int64),"), inputs: []input{in}},
		)
		k := 1 + rs.IntN(m)
		if rs.IntN(2) == 0 {
			k = -k
		}
		sl := func(e string) string {
			return fmt.Sprintf("(%s)[%s:%d]", e, strings.Repeat(":,", ax), max(k, -k))
		}
		top := fmt.Sprintf("np.sort(x, axis=%d, kind='stable')", axis)
		argTop := fmt.Sprintf("np.argsort(x, axis=%d, kind='stable')", axis)
		if k > 0 {
			top, argTop = flipSort, flipArg
		}
		cs = append(cs,
			check{what: what(fmt.Sprintf("TopK(k=%d)", k)), got: TopK(x, k, axis), code: sl(top), inputs: []input{in}},
			check{what: what(fmt.Sprintf("ArgTopK(k=%d)", k)), got: ArgTopK(x, k, axis), code: sl(argTop), inputs: []input{in}},
		)
	}
	return cs
}

func TestSortMatchesNumPy(t *testing.T) {
	runChecks(t, sortCases(1, 40))
	runChecks(t, sortCases(2, 10), Threads(1))
}

// TestSortLongLinesMatchNumPy sorts lines long enough for the CPU's radix path (NaNs, signed
// zeros and ties among the values).
func TestSortLongLinesMatchNumPy(t *testing.T) {
	rs := rand.New(rand.NewPCG(6, 6))
	var cs []check
	for _, shape := range [][]int{{20000}, {3, 5000}} {
		x, in := sortInput(rs, shape)
		what := fmt.Sprintf("(shape %v)", shape)
		cs = append(cs,
			check{what: "Sort" + what, got: Sort(x, -1), code: "np.sort(x, axis=-1, kind='stable')", inputs: []input{in}},
			check{what: "Sort descending" + what, got: Sort(x, -1, Descending()), code: "np.flip(np.sort(np.flip(x, -1), axis=-1, kind='stable'), -1)", inputs: []input{in}},
			check{what: "Sort float32" + what, got: Sort(x.AsType(Float32), -1), code: "np.sort(x.astype(np.float32), axis=-1, kind='stable')", inputs: []input{in}},
			check{what: "Sort int16" + what, got: Sort(FromSlice(clean(in.data), Shape(shape...)).Mul(97).AsType(Int16), -1), code: "np.sort((np.nan_to_num(x) * 97).astype(np.int16), axis=-1)", inputs: []input{in}},
			check{what: "Median" + what, got: Median(x, -1), code: "np.median(x, axis=-1)", inputs: []input{in}},
			check{what: "Argsort" + what, got: Argsort(x, -1), code: "np.argsort(x, axis=-1, kind='stable')", inputs: []input{in}},
			check{what: "Argsort descending" + what, got: Argsort(x, -1, Descending()), code: fmt.Sprintf("%d - np.flip(np.argsort(np.flip(x, -1), axis=-1, kind='stable'), -1)", shape[len(shape)-1]-1), inputs: []input{in}},
			check{what: "ArgTopK" + what, got: ArgTopK(x, 7, -1), code: fmt.Sprintf("(%d - np.flip(np.argsort(np.flip(x, -1), axis=-1, kind='stable'), -1))[..., :7]", shape[len(shape)-1]-1), inputs: []input{in}},
		)
	}
	runChecks(t, cs)
}

// clean returns v with NaNs as 0.
func clean(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		if f == f {
			out[i] = f
		}
	}
	return out
}

// TestTopKMatchesDask compares TopK with dask's topk on data without NaNs (dask's chunked
// partition orders NaN as NumPy's partition does; both put them with the largest).
func TestTopKMatchesDask(t *testing.T) {
	rs := rand.New(rand.NewPCG(3, 3))
	var cs []check
	for i := 0; i < 8; i++ {
		shape := npShape(rs, 2, 2, 12)
		x, in := randArray(rs, "x", shape)
		axis := rs.IntN(2)
		k := 1 + rs.IntN(shape[axis])
		if i%2 == 1 {
			k = -k
		}
		cs = append(cs, check{
			what:   fmt.Sprintf("TopK(shape %v, k %d, axis %d)", shape, k, axis),
			got:    TopK(x, k, axis),
			code:   fmt.Sprintf("__import__('dask.array').array.topk(__import__('dask.array').array.from_array(x, chunks=%s), %d, axis=%d).compute()", tuple(chunkSizes(x.Chunks())), k, axis),
			inputs: []input{in},
		})
	}
	runChecks(t, cs)
}

func chunkSizes(c [][]int) []int {
	out := make([]int, len(c))
	for i, s := range c {
		out[i] = s[0]
	}
	return out
}

func TestSortErrors(t *testing.T) {
	x := FromSlice([]float64{3, 1, 2, 5, 4, 6}, Shape(2, 3), Chunks(1, 2))
	for _, c := range []struct {
		a    *Array
		want string
	}{
		{Sort(x, 2), "axis 2 out of range"},
		{Argsort(x, -3), "axis -3 out of range"},
		{TopK(x, 4, 1), "k = 4"},
		{ArgTopK(x, 0, 0), "k = 0"},
		{Sort(x.AsType(Complex128), 0), "no order"},
		{Sort(FromSlice([]float64{1}, Shape()), 0), "0-d"},
	} {
		if err := c.a.Err(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one with %q", err, c.want)
		}
	}
	got, err := Sort(x, 1, Descending()).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[3 2 1 6 5 4]" {
		t.Errorf("Sort descending: %v", got)
	}
}

// TestGPUSortMatchesNumPy runs sorts with a GPU scheduler: the fused values and the sort on
// the device (package cuda/devsort), with no host fallback in Path.
func TestGPUSortMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, sortCases(4, 6), OnGPU())
	x := FromSlice([]float64{3, 1, 2, 5, 4, 6}, Shape(2, 3), Chunks(1, 2))
	c, err := Sort(x.Mul(2), 1).Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(c.Path(), "host fallback") {
		t.Errorf("the sort fell back to the host: %q", c.Path())
	}
	got, err := c.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != "[2 4 6 8 10 12]" {
		t.Errorf("Sort(2x) on the GPU: %v", got)
	}
}

// BenchmarkSort sorts 1e6 float64 normals: in one line, and as 1000 lines of 1000 along the
// last axis (the lines in parallel).
func BenchmarkSort(b *testing.B) {
	v, err := NewRandomState(1).Normal(0, 1, Shape(1000000)).ToSlice()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		shape []int
	}{{"1e6", []int{1000000}}, {"1000x1000", []int{1000, 1000}}} {
		x := FromSlice(v, Shape(c.shape...))
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := Sort(x, -1).Compute(Inline()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkArgsort argsorts 1e6 float64 normals in one line (the CPU's radix path).
func BenchmarkArgsort(b *testing.B) {
	v, err := NewRandomState(1).Normal(0, 1, Shape(1000000)).ToSlice()
	if err != nil {
		b.Fatal(err)
	}
	x := FromSlice(v, Shape(1000000))
	for b.Loop() {
		if _, err := Argsort(x, -1).Compute(Inline()); err != nil {
			b.Fatal(err)
		}
	}
}

// TestCallReadsNarrowingCast: a library call whose input is a narrowing cast of data reads the
// cast values, not the data (Rfft of x.AsType(Int32) truncates first, as NumPy).
func TestCallReadsNarrowingCast(t *testing.T) {
	_, in := randArray(rand.New(rand.NewPCG(5, 5)), "x", []int{7})
	x := FromSlice(in.data, Shape(7), Chunks(3))
	checkFFT(t, []check{
		{what: "Rfft(x.AsType(Int32))", got: Rfft(x.AsType(Int32)), code: "np.fft.rfft(x.astype(np.int32))", inputs: []input{in}},
	})
	runChecks(t, []check{{what: "Sort(x.AsType(Int32))", got: Sort(x.AsType(Int32), 0), code: "np.sort(x.astype(np.int32))", inputs: []input{in}}})
}
