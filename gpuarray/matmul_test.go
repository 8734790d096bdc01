package gpuarray_test

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
)

// blockedProduct computes a·b (1-d or 2-d operands, as MatMul takes them) with the blocked
// product of package linalg on the operands' chunks and the CPU's kernels (OpenBLAS or gonum):
// each output block the sum, in order, of the products of the blocks along the inner axis. It
// returns the product as data chunked like MatMul's result (a's row chunks by b's column
// chunks), the reference the lazy product must equal bit for bit on the CPU. Blocks are
// computed one at a time (Workers 1), so each call gets OpenBLAS's threads as a lazy task's
// calls do: OpenBLAS's bits depend on its thread count (at 400 x 300 x 1000 they differ).
func blockedProduct(t testing.TB, a, b *gpuarray.Array) *gpuarray.Array {
	t.Helper()
	matrix := func(x *gpuarray.Array, row bool) linalg.Matrix {
		vals, err := x.ToSlice(gpuarray.Inline())
		if err != nil {
			t.Fatal(err)
		}
		g := linalg.Grid{RowChunks: []int{1}, ColChunks: x.Chunks()[0]}
		switch {
		case len(x.Shape()) == 2:
			g = linalg.Grid{RowChunks: x.Chunks()[0], ColChunks: x.Chunks()[1]}
		case !row:
			g = linalg.Grid{RowChunks: x.Chunks()[0], ColChunks: []int{1}}
		}
		m, err := linalg.FromGrid(linalg.Mat{Rows: g.Rows(), Cols: g.Cols(), Data: vals}, g)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	p, err := linalg.MatMul(t.Context(), matrix(a, true), matrix(b, false), linalg.Options{Kernels: cpu.Gemm(), Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	var shape []int
	var chunks [][]int
	if len(a.Shape()) == 2 {
		shape, chunks = append(shape, p.C.Rows), append(chunks, p.Grid.RowChunks)
	}
	if len(b.Shape()) == 2 {
		shape, chunks = append(shape, p.C.Cols), append(chunks, p.Grid.ColChunks)
	}
	return gpuarray.FromSlice(p.C.Data, gpuarray.Shape(shape...), gpuarray.ChunkSizes(chunks...))
}

// equalBits fails unless got and want hold the same float64 bits.
func equalBits(t testing.TB, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for j := range want {
		if math.Float64bits(got[j]) != math.Float64bits(want[j]) {
			t.Fatalf("%s: element %d is %v lazy, %v blocked", what, j, got[j], want[j])
		}
	}
}

// TestMatMulPanelsUnderMemoryLimit: each task of a product holds one row chunk of a and one
// column chunk of b, so a product whose b is larger than the memory limit of a task runs (and
// gives the blocked product's bits), where b in one column chunk is refused with the limit's
// error.
func TestMatMulPanelsUnderMemoryLimit(t *testing.T) {
	rs := gpuarray.NewRandomState(21)
	x := rs.StandardNormal(gpuarray.Shape(400, 300), gpuarray.Chunks(100, 150))
	y := rs.StandardNormal(gpuarray.Shape(300, 1000), gpuarray.Chunks(100, 100)).Mul(3).Add(1)
	// A task: a's row chunk (100 x 300), y's panel (300 x 100) and its block of C (100 x 100),
	// 560,000 bytes; y is 2,400,000.
	const limit = 1 << 20
	want, err := blockedProduct(t, x, y).Sum(0).ToSlice(gpuarray.Inline())
	if err != nil {
		t.Fatal(err)
	}
	for _, opt := range []gpuarray.ComputeOption{gpuarray.Inline(), gpuarray.Threads(2)} {
		got, err := gpuarray.MatMul(x, y).Sum(0).ToSlice(opt, gpuarray.MemoryLimit(limit))
		if err != nil {
			t.Fatalf("a product whose b (2.4 MB) exceeds the task limit (1 MiB): %v", err)
		}
		equalBits(t, "sum(x y, 0)", got, want)
	}
	whole := gpuarray.MatMul(x, y.Rechunk(300, 1000)).Sum(0)
	if _, err := whole.ToSlice(gpuarray.MemoryLimit(limit)); err == nil || !strings.Contains(err.Error(), "memory limit") {
		t.Fatalf("b in one column chunk of 2.4 MB under a 1 MiB limit: %v, want the limit's error", err)
	}
	got, err := whole.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for j := range want {
		if math.Abs(got[j]-want[j]) > 1e-12*math.Max(1, math.Abs(want[j])) {
			t.Fatalf("one panel: element %d is %v, %v in panels", j, got[j], want[j])
		}
	}
}

// TestMatMulErrorsKept: operands that do not align (or are not 1-d or 2-d, or complex) give an
// array that holds the error, reported by Err and Compute and carried by the work after it,
// as every lazy op does; an operand's own error is passed on.
func TestMatMulErrorsKept(t *testing.T) {
	rs := gpuarray.NewRandomState(1)
	a := rs.StandardNormal(gpuarray.Shape(5, 4))
	b := rs.StandardNormal(gpuarray.Shape(3, 2))
	for _, c := range []struct {
		name string
		p    *gpuarray.Array
		want string
	}{
		{"a.Dot(b)", a.Dot(b), "MatMul: shapes (5, 4) and (3, 2) not aligned: 4 (dim 1) != 3 (dim 0)"},
		{"MatMul(b, vector)", gpuarray.MatMul(b, rs.StandardNormal(gpuarray.Shape(5))), "MatMul: shapes (3, 2) and (5,) not aligned: 2 (dim 1) != 5 (dim 0)"},
		{"3-d", gpuarray.MatMul(rs.StandardNormal(gpuarray.Shape(2, 5, 4)), a.T()), "MatMul: shapes (2, 5, 4) and (4, 5): want 1-d or 2-d operands"},
		{"complex", gpuarray.MatMul(a.AsType(gpuarray.Complex128), a.T()), "MatMul: complex matrices are not supported yet"},
	} {
		err := c.p.Err()
		if err == nil || err.Error() != c.want {
			t.Fatalf("%s: Err %v, want %q", c.name, err, c.want)
		}
		if _, cerr := c.p.Compute(); cerr == nil || !strings.Contains(cerr.Error(), c.want) {
			t.Errorf("%s: Compute: %v", c.name, cerr)
		}
		if aerr := c.p.Add(1).Sum().Err(); aerr == nil || !strings.Contains(aerr.Error(), c.want) {
			t.Errorf("%s: the sum of the product plus one: %v", c.name, aerr)
		}
	}
	bad := a.Dot(b)
	if err := gpuarray.MatMul(bad, a).Err(); !errors.Is(err, bad.Err()) && (err == nil || err.Error() != bad.Err().Error()) {
		t.Errorf("a product of a failed product: %v, want %v", err, bad.Err())
	}
}
