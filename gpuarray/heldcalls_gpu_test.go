package gpuarray

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// TestGPUHeldCallsReadInPlace: sorts, FFTs, the lazy product, solve and other matrix
// functions of an array persisted on the GPU (float64, and float32 held in 4-byte floats)
// read its chunks where the GPU holds them: Path names no host step, and the values are
// those of the same computation regenerating the array on the GPU, bit for bit. That holds
// for a sort across the persisted chunks (joined on the GPU) and for a call's persisted
// further operands (a solve's right-hand sides, a product's b), in one chunk or several.
func TestGPUHeldCallsReadInPlace(t *testing.T) {
	needGPU(t)
	for _, dt := range []DType{Float64, Float32} {
		rs := NewRandomState(31)
		x := rs.StandardNormal(Shape(600, 512), Chunks(200, 512), WithDType(dt))
		m0 := rs.StandardNormal(Shape(256, 256), Chunks(256, 256), WithDType(dt))
		m := m0.Add(m0.T()).Add(Eye(256, 256, 0, Chunks(256, 256), WithDType(dt)).Mul(64))
		b := rs.StandardNormal(Shape(256, 4), Chunks(256, 4))
		y := rs.StandardNormal(Shape(512, 300), Chunks(512, 150))
		// Operands of the array's dtype whose rows span several chunks.
		b2 := rs.StandardNormal(Shape(256, 4), Chunks(100, 3), WithDType(dt))
		y2 := rs.StandardNormal(Shape(512, 300), Chunks(200, 150), WithDType(dt))
		px, pm, py, pb := x.Persist(OnGPU()), m.Persist(OnGPU()), y.Persist(OnGPU()), b.Persist(OnGPU())
		pb2, py2 := b2.Persist(OnGPU()), y2.Persist(OnGPU())
		for _, p := range []*Array{px, pm, py, pb, pb2, py2} {
			if err := p.Err(); err != nil {
				t.Fatal(err)
			}
			defer p.Release()
		}
		ops := []struct {
			what   string
			op     func(x, m, y, b *Array) *Array // the operands, persisted or not
			onHost bool                           // reads the persisted chunks through host memory, named in Path
		}{
			{"sort", func(x, _, _, _ *Array) *Array { return Sort(x, 1) }, false},
			{"argsort", func(x, _, _, _ *Array) *Array { return Argsort(x, 1, Descending()) }, false},
			{"rfft", func(x, _, _, _ *Array) *Array { return Rfft(x, FFTAxis(1)) }, false},
			{"fft", func(x, _, _, _ *Array) *Array { return Fft(x, FFTAxis(1)) }, false},
			{"matmul", func(x, _, _, _ *Array) *Array { return MatMul(x, y) }, false},
			{"matmul of a slice", func(x, _, _, _ *Array) *Array { return MatMul(x.Slice(Span(0, 200)), y) }, false},
			{"solve", func(_, m, _, _ *Array) *Array { return Solve(m, b) }, false},
			// float64: the one-GPU product reads b's held blocks; float32 x takes the call
			// stage, whose b (a further operand) is copied on the GPU from where it is held.
			{"matmul by a persisted b", func(x, _, y, _ *Array) *Array { return MatMul(x, y) }, false},
			{"solve for persisted right-hand sides", func(_, m, _, b *Array) *Array { return Solve(m, b) }, false},
			{"inv", func(_, m, _, _ *Array) *Array { return Inv(m) }, false},
			{"cholesky", func(_, m, _, _ *Array) *Array { return Cholesky(m) }, false},
			{"eigvalsh", func(_, m, _, _ *Array) *Array { return Eigvalsh(m) }, false},
			{"cumulative sum", func(x, _, _, _ *Array) *Array { return CumulativeSum(x, 1, false) }, false},
			{"sort across chunks", func(x, _, _, _ *Array) *Array { return Sort(x, 0) }, false},
		}
		spanning := []struct {
			what string
			op   func(x, m, b, y *Array) *Array
		}{
			{"solve for right-hand sides in several chunks", func(_, m, b, _ *Array) *Array { return Solve(m, b) }},
			{"matmul by a b in several chunks", func(x, _, _, y *Array) *Array { return MatMul(x, y) }},
			{"matmul of rows spanning chunks by a b in several chunks", func(x, _, _, y *Array) *Array { return MatMul(x.Slice(Span(100, 500)), y) }},
		}
		for _, c := range spanning {
			ops = append(ops, struct {
				what   string
				op     func(x, m, y, b *Array) *Array
				onHost bool
			}{c.what, func(x, m, _, _ *Array) *Array {
				if x == px {
					return c.op(x, m, pb2, py2)
				}
				return c.op(x, m, b2, y2)
			}, false})
		}
		for _, c := range ops {
			what := c.what + " of " + dt.String()
			p := sameAsRegenerated(t, what, c.op(x, m, y, b), c.op(px, pm, py, pb))
			if named := strings.Contains(p, "host read:"); named != c.onHost || !c.onHost && strings.Contains(p, "host") {
				t.Errorf("%s of the persisted array: Path %q (a host read expected: %v)", what, p, c.onHost)
			}
		}
	}
}

// TestGPUJoinsNarrowIntegers: blocks spanning chunks of integer and bool arrays persisted in
// their own element size (1, 2 and 4 bytes) are joined on the GPU in that size: a sort and a
// cumulative sum across the chunks, and a sum of x + x.T (whose transposed blocks span chunks
// when the chunks are not square), equal the regenerated run's bit for bit, with no host step.
func TestGPUJoinsNarrowIntegers(t *testing.T) {
	needGPU(t)
	rs := NewRandomState(41)
	for _, dt := range []DType{Int8, Int16, Int32, Uint16, Bool} {
		var x *Array
		if dt == Bool {
			x = rs.StandardNormal(Shape(600, 600), Chunks(200, 300)).Gt(0)
		} else {
			x = rs.Integers(-100, 100, Shape(600, 600), Chunks(200, 300), WithDType(dt))
			if dt == Uint16 {
				x = rs.Integers(0, 60000, Shape(600, 600), Chunks(200, 300), WithDType(dt))
			}
		}
		px := x.Persist(OnGPU())
		if err := px.Err(); err != nil {
			t.Fatal(err)
		}
		for what, op := range map[string]func(*Array) *Array{
			"sort across chunks":              func(a *Array) *Array { return Sort(a, 0) },
			"cumulative sum across chunks":    func(a *Array) *Array { return CumulativeSum(a, 0, false) },
			"x + x.T summed along the chunks": func(a *Array) *Array { return a.AsType(Int64).Add(a.T().AsType(Int64)).Sum(1) },
		} {
			what += " of " + dt.String()
			if p := sameAsRegenerated(t, what, op(x), op(px)); strings.Contains(p, "host") {
				t.Errorf("%s of the persisted array: Path %q names a host step", what, p)
			}
		}
		px.Release()
	}
}

// sameAsRegenerated computes regen (of arrays generated on the GPU) and held (the same of
// their persisted copies) on the GPU, checks that they have the same bits, and returns held's
// Path.
func sameAsRegenerated(t *testing.T, what string, regen, held *Array) string {
	t.Helper()
	r, err := regen.Compute(OnGPU())
	if err != nil {
		t.Fatalf("%s regenerated: %v", what, err)
	}
	defer r.Release()
	h, err := held.Compute(OnGPU())
	if err != nil {
		t.Fatalf("%s persisted: %v", what, err)
	}
	defer h.Release()
	p := h.Path()
	ra, err := r.n.Values()
	if err != nil {
		t.Fatal(err)
	}
	ha, err := h.n.Values()
	if err != nil {
		t.Fatal(err)
	}
	if !dtype.Equal(ra, ha) {
		t.Errorf("%s: the persisted array's result differs from the regenerated one's (Path %q)", what, p)
	}
	return p
}
