package linalg

import "fmt"

// applyThin writes Q*[w; 0] into dst (m x p) for the QR factor f of an m x n block (m >= n,
// w n x p) with matrix products only, when the kernels and the factor allow it; ok is false
// (and dst untouched) otherwise.
//
// Q = H_0*...*H_{n-1} = I - V*T*V^T with V the reflectors (m x n, unit lower trapezoidal) and
// T^-1 = striu(V^T*V) + diag(1/tau) (the UT transform of Joffrain et al., 2006, which holds
// for any tau), so Q*[w; 0] = [w; 0] - V*Y with Y = T*(V1^T*w), V1 the top n x n of V. That is
// a Gram matrix (m*n^2 flops), a triangular solve and a product (2*m*n*p), all level-3 BLAS,
// where LAPACK's dormqr/dormlq applies every reflector to all m rows of [w; 0], zeros
// included (4*m*n*p flops, in blocks of a few dozen reflectors).
func applyThin(kern Kernels, f Factor, w, dst Mat) (ok bool, err error) {
	tk, ok1 := kern.(Triangular)
	rf, ok2 := f.(Reflectors)
	if !ok1 || !ok2 {
		return false, nil
	}
	a, tau := rf.Householder()
	m, n, p := a.Rows, a.Cols, w.Cols
	if m < n || n == 0 || len(tau) != n || w.Rows != n || dst.Rows != m || dst.Cols != p {
		return false, nil
	}
	for _, t := range tau {
		if t == 0 { // an identity reflector: 1/tau has no value
			return false, nil
		}
	}
	// V1: the top n x n of V, unit lower triangular.
	v1 := NewMat(n, n)
	for i := 0; i < n; i++ {
		copy(v1.Data[i*n:i*n+i], a.Data[i*n:i*n+i])
		v1.Data[i*n+i] = 1
	}
	vb := Mat{Rows: m - n, Cols: n, Data: a.Data[n*n:]} // the rest of V, in place
	g := NewMat(n, n)
	if err := tk.Syrk(1, v1, 0, g); err != nil {
		return true, fmt.Errorf("V^T*V: %w", err)
	}
	if m > n {
		if err := tk.Syrk(1, vb, 1, g); err != nil {
			return true, fmt.Errorf("V^T*V: %w", err)
		}
	}
	// g becomes T^-1: its strictly upper triangle, 1/tau on the diagonal (the lower triangle
	// is not read).
	for i := 0; i < n; i++ {
		g.Data[i*n+i] = 1 / tau[i]
	}
	y := NewMat(n, p)
	if err := kern.Gemm(true, false, 1, v1, w, 0, y); err != nil {
		return true, fmt.Errorf("V1^T*W: %w", err)
	}
	if err := tk.Trsm(g, y); err != nil {
		return true, fmt.Errorf("T*(V1^T*W): %w", err)
	}
	top := Mat{Rows: n, Cols: p, Data: dst.Data[:n*p]}
	copy(top.Data, w.Data)
	if err := kern.Gemm(false, false, -1, v1, y, 1, top); err != nil {
		return true, fmt.Errorf("top rows, w - V1*Y: %w", err)
	}
	if m > n {
		bottom := Mat{Rows: m - n, Cols: p, Data: dst.Data[n*p : m*p]}
		if err := kern.Gemm(false, false, -1, vb, y, 0, bottom); err != nil {
			return true, fmt.Errorf("lower rows, -V*Y: %w", err)
		}
	}
	return true, nil
}
