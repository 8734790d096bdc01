package gpuarray

import (
	"math"
	"strings"
	"testing"
)

// TestGPUMatrixOutputsStayOnDevice: Inv, Solve, Cholesky, Eigvalsh, Eigh's vectors, Pinv and
// Lstsq of matrices persisted on the GPU write their results into device memory (cuSOLVER's
// keep runner): the result is held on the GPU, Path
// names no host assembly, the values match the CPU's within 1e-9 of their largest, and a
// chained abs and sum reads the held result in place.
func TestGPUMatrixOutputsStayOnDevice(t *testing.T) {
	needGPU(t)
	rs := NewRandomState(52)
	m0 := rs.StandardNormal(Shape(300, 300), Chunks(300, 300))
	pm := m0.Add(Eye(300, 300, 0, Chunks(300, 300)).Mul(40)).Persist(OnGPU())
	pb := rs.StandardNormal(Shape(300, 4), Chunks(300, 4)).Persist(OnGPU())
	pb1 := rs.StandardNormal(Shape(300, 1), Chunks(300, 1)).Persist(OnGPU())
	for _, p := range []*Array{pm, pb, pb1} {
		if err := p.Err(); err != nil {
			t.Fatal(err)
		}
		defer p.Release()
	}
	m, b, b1 := hostCopy(t, pm), hostCopy(t, pb), hostCopy(t, pb1)
	cases := []struct {
		name string
		f    func(m, b, b1 *Array) *Array
	}{
		{"inv", func(m, _, _ *Array) *Array { return Inv(m) }},
		{"solve for persisted right-hand sides", func(m, b, _ *Array) *Array { return Solve(m, b) }},
		{"solve for one persisted column", func(m, _, b1 *Array) *Array { return Solve(m, b1) }},
		{"solve for right-hand sides computed in the graph", func(m, b, _ *Array) *Array { return Solve(m, b.Mul(2).Add(1)) }},
		// m + m^T: symmetric, its eigenvalues within about 80 +- 50, so positive definite.
		{"cholesky", func(m, _, _ *Array) *Array { return Cholesky(m.Add(m.T())) }},
		{"eigvalsh", func(m, _, _ *Array) *Array { return Eigvalsh(m.Add(m.T())) }},
		{"eigh vectors (magnitudes: signs are LAPACK's choice)", func(m, _, _ *Array) *Array {
			_, v := Eigh(m.Add(m.T()))
			return v.Abs()
		}},
		{"pinv of a tall matrix", func(_, b, _ *Array) *Array { return Pinv(b) }},
		{"lstsq for one persisted column", func(_, b, b1 *Array) *Array { return Lstsq(b, b1) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, err := c.f(m, b, b1).Compute(Inline())
			if err != nil {
				t.Fatal(err)
			}
			got, err := c.f(pm, pb, pb1).Compute(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			defer got.Release()
			if got.Where() != "gpu 0" {
				t.Fatalf("the output is not on the GPU: where %q, path %s", got.Where(), got.Path())
			}
			if p := got.Path(); strings.Contains(p, "assembled on the host") || strings.Contains(p, "main memory") || strings.Contains(p, "host trip") {
				t.Fatalf("path names a host step: %s", p)
			}
			wv, err := want.n.Values()
			if err != nil {
				t.Fatal(err)
			}
			gv, err := got.n.Values()
			if err != nil {
				t.Fatal(err)
			}
			tol := 1e-9
			if strings.HasPrefix(c.name, "eigh") {
				tol = 1e-7 // eigenvectors move by rounding over the eigenvalue gaps
			}
			closeSlices(t, c.name, gv, wv, false, tol)
			ws, err := c.f(m, b, b1).Abs().Sum().Float64(Inline())
			if err != nil {
				t.Fatal(err)
			}
			gs, err := c.f(pm, pb, pb1).Abs().Sum().Compute(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			if p := gs.Path(); strings.Contains(p, "host read") || strings.Contains(p, "host trip") || strings.Contains(p, "host fallback") {
				t.Fatalf("the chained sum's path names a host step: %s", p)
			}
			s, err := gs.Float64()
			if err != nil {
				t.Fatal(err)
			}
			if math.Abs(s-ws) > tol*math.Max(math.Abs(ws), 1) {
				t.Fatalf("abs then sum: %v on the GPU, %v on the CPU", s, ws)
			}
		})
	}
}
