package gpuarray

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestGPUTakeRowsOnDevice gathers int32 (held narrow), int64, float64 and float32 arrays
// persisted on the GPU in several chunks, and one computed there, at int32 rows with -1s, in
// pieces of which one is empty: every result is held on the GPU in the pieces' chunks and
// equals the host's gather bit for bit (zero at -1); the kept index equals the rows, and a
// stage computed from it on the GPU (rows >= 0) reads it there.
func TestGPUTakeRowsOnDevice(t *testing.T) {
	needGPU(t)
	const n = 300001
	r := rand.New(rand.NewPCG(33, 9))
	i32 := make([]int32, n)
	i64 := make([]int64, n)
	f64 := make([]float64, n)
	f32 := make([]float32, n)
	for i := range i32 {
		i32[i], i64[i], f64[i], f32[i] = int32(r.Uint32()), int64(r.Uint64()), r.NormFloat64(), float32(r.NormFloat64())
	}
	ch := Chunks(70000)
	xs := []*Array{FromSliceInt32(i32, ch).Persist(OnGPU()), FromSliceInt64(i64, ch).Persist(OnGPU()),
		FromSlice(f64, ch).Persist(OnGPU()), FromSlice(f32, ch).Persist(OnGPU())}
	xs = append(xs, xs[1].Mul(int64(3)))
	for _, x := range xs[:4] {
		if err := x.Err(); err != nil {
			t.Fatal(err)
		}
		defer x.Release()
	}
	rows := make([]int32, 450003)
	for i := range rows {
		rows[i] = int32(r.IntN(n))
		if r.IntN(7) == 0 {
			rows[i] = -1
		}
	}
	pieces := [][]int32{rows[:100000], nil, rows[100000:350000], rows[350000:]}
	out, idx, why, err := TakeRowsOnGPU(xs, pieces, true, OnGPU())
	if err != nil || why != "" {
		t.Fatalf("why %q, err %v", why, err)
	}
	wantChunks := []int{100000, 250000, 100003}
	for k, o := range out {
		if !strings.HasPrefix(o.Where(), "gpu ") || !strings.Contains(o.Path(), "gathered on gpu") || !slices.Equal(o.Chunks()[0], wantChunks) {
			t.Fatalf("array %d: where %q, path %q, chunks %v", k, o.Where(), o.Path(), o.Chunks())
		}
	}
	check := func(k int, got []uint64, at func(int) uint64) {
		t.Helper()
		for i, row := range rows {
			want := uint64(0)
			if row >= 0 {
				want = at(int(row))
			}
			if got[i] != want {
				t.Fatalf("array %d: element %d (row %d) is %#x, want %#x", k, i, row, got[i], want)
			}
		}
	}
	g32, err := out[0].ToSliceInt64(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	check(0, asWords(g32), func(i int) uint64 { return uint64(int64(i32[i])) })
	g64, err := out[1].ToSliceInt64(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	check(1, asWords(g64), func(i int) uint64 { return uint64(i64[i]) })
	gf, err := out[2].ToSlice(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	fw := make([]uint64, len(gf))
	for i, v := range gf {
		fw[i] = math.Float64bits(v)
	}
	check(2, fw, func(i int) uint64 { return math.Float64bits(f64[i]) })
	g3, err := out[3].ToSlice(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range g3 {
		fw[i] = uint64(math.Float32bits(float32(v)))
	}
	check(3, fw, func(i int) uint64 { return uint64(math.Float32bits(f32[i])) })
	g4, err := out[4].ToSliceInt64(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	check(4, asWords(g4), func(i int) uint64 { return uint64(3 * i64[i]) })
	gi, err := idx.ToSliceInt64(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range gi {
		if v != int64(rows[i]) {
			t.Fatalf("index %d is %d, want %d", i, v, rows[i])
		}
	}
	valid, err := idx.Ge(int32(0)).AsType(Int64).Sum().ToSliceInt64(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	nv := 0
	for _, x := range rows {
		if x >= 0 {
			nv++
		}
	}
	if valid[0] != int64(nv) {
		t.Fatalf("rows >= 0 on the GPU: %d, want %d", valid[0], nv)
	}
}

func asWords(v []int64) []uint64 {
	out := make([]uint64, len(v))
	for i, x := range v {
		out[i] = uint64(x)
	}
	return out
}
