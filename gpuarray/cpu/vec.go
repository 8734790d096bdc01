package cpu

import "math"

// divGo is div's portable loop.
func divGo(dst, a, b []float64) {
	b = b[:len(dst)]
	a = a[:len(dst)]
	for i := range dst {
		dst[i] = a[i] / b[i]
	}
}

// absGo is abs's portable loop.
func absGo(dst, a []float64) {
	a = a[:len(dst)]
	for i, x := range a {
		dst[i] = math.Abs(x)
	}
}

// welfordGo is welford's portable loop.
func welfordGo(n, m, m2, v []float64, c, inv float64) {
	n, m, m2 = n[:len(v)], m[:len(v)], m2[:len(v)]
	for i, x := range v {
		n[i] = c
		d := x - m[i]
		m[i] += d * inv
		m2[i] += d * (x - m[i])
	}
}
