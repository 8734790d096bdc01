package gpuarray

import (
	"math"
	"testing"
)

// TestGPUQRHeldOnDevice: the QR of a tall-and-skinny array persisted on the GPU (six row
// chunks) runs its TSQR on the device (qrOnDevice) and leaves Q and R held there; Q*R is the
// input within 1e-12 of its largest value, Q's columns are orthonormal, R is upper
// triangular and equal to the CPU's R up to the signs of its rows (Householder's choice per
// tree), and chained stages (Q's absolute sum, the product Q*R on the device) read them in
// place.
func TestGPUQRHeldOnDevice(t *testing.T) {
	needGPU(t)
	const m, n = 6000, 40
	pa := NewRandomState(61).StandardNormal(Shape(m, n), Chunks(1000, n)).Persist(OnGPU())
	if err := pa.Err(); err != nil {
		t.Fatal(err)
	}
	defer pa.Release()
	a := hostCopy(t, pa)
	got, err := QR(pa, OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	defer got.Q.Release()
	defer got.R.Release()
	if got.Q.Where() != "gpu 0" || got.R.Where() != "gpu 0" {
		t.Fatalf("Q on %q, R on %q, want both on gpu 0 (path %s)", got.Q.Where(), got.R.Where(), got.Path)
	}
	want, err := QR(a, Inline())
	if err != nil {
		t.Fatal(err)
	}
	av, _ := a.ToSlice(Inline())
	scale := 0.0
	for _, v := range av {
		scale = max(scale, math.Abs(v))
	}
	// Chained on the device: Q*R (a product reading both held arrays), then its values.
	qr, err := MatMul(got.Q, got.R).Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	defer qr.Release()
	qrv, err := qr.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i := range av {
		if d := math.Abs(qrv[i] - av[i]); d > 1e-12*scale*n {
			t.Fatalf("(Q*R)[%d] = %v, a = %v", i, qrv[i], av[i])
		}
	}
	qv, err := got.Q.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			dot := 0.0
			for r := 0; r < m; r++ {
				dot += qv[r*n+i] * qv[r*n+j]
			}
			if want := b2f(i == j); math.Abs(dot-want) > 1e-12 {
				t.Fatalf("(Q^T Q)[%d, %d] = %v", i, j, dot)
			}
		}
	}
	rv, err := got.R.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	wr, err := want.R.ToSlice(Inline())
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < n; i++ {
		sign := math.Copysign(1, rv[i*n+i]) * math.Copysign(1, wr[i*n+i])
		for j := 0; j < n; j++ {
			if j < i && rv[i*n+j] != 0 {
				t.Fatalf("R[%d, %d] = %v below the diagonal", i, j, rv[i*n+j])
			}
			if d := math.Abs(rv[i*n+j] - sign*wr[i*n+j]); d > 1e-10*scale*n {
				t.Fatalf("R[%d, %d] = %v, the CPU's %v (row sign %v)", i, j, rv[i*n+j], wr[i*n+j], sign)
			}
		}
	}
	s, err := got.Q.Abs().Sum().Float64(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	ws := 0.0
	for _, v := range qv {
		ws += math.Abs(v)
	}
	if math.Abs(s-ws) > 1e-9*ws {
		t.Fatalf("sum(|Q|) on the GPU %v, from Q's values %v", s, ws)
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
