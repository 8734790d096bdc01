package openblas

import "fmt"

// Getrf LU-factors the column-major n x n matrix a in place with LAPACK's dgetrf (partial
// pivoting, as numpy.linalg.solve) and returns the 1-based pivots and info: positive when U's
// diagonal has an exact zero (a is singular).
func Getrf(a []float64, n int) (ipiv []int32, info int32, err error) {
	if err := Load(); err != nil {
		return nil, 0, err
	}
	if len(a) != n*n || n < 1 {
		return nil, 0, fmt.Errorf("dgetrf: %d values for a %d x %d matrix", len(a), n, n)
	}
	ipiv = make([]int32, n)
	N := int32(n)
	dgetrf(&N, &N, &a[0], &N, &ipiv[0], &info)
	if info < 0 {
		return nil, 0, fmt.Errorf("dgetrf: argument %d is invalid", -info)
	}
	return ipiv, info, nil
}

// Getrs solves op(A) X = B with Getrf's factors of A (op: the transpose when trans is set),
// for the column-major n x nrhs b, overwritten with X.
func Getrs(trans bool, a []float64, n int, ipiv []int32, b []float64, nrhs int) error {
	if err := Load(); err != nil {
		return err
	}
	if len(a) != n*n || len(ipiv) != n || len(b) != n*nrhs || n < 1 {
		return fmt.Errorf("dgetrs: %d x %d factors, %d pivots, %d right-hand side values for %d columns", n, n, len(ipiv), len(b), nrhs)
	}
	if nrhs == 0 {
		return nil
	}
	t := byte('N')
	if trans {
		t = 'T'
	}
	N, R := int32(n), int32(nrhs)
	var info int32
	dgetrs(&t, &N, &R, &a[0], &N, &ipiv[0], &b[0], &N, &info, 1)
	if info != 0 {
		return fmt.Errorf("dgetrs: info %d", info)
	}
	return nil
}
