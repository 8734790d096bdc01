// Package openblas runs linalg's block kernels on the CPU with OpenBLAS (its BLAS and the
// LAPACK built into it), loaded at run time with dlopen as the CUDA libraries are, so that
// gpunotes builds and runs without it: linalg.CPU (gonum, pure Go) is the fallback.
//
// LAPACK is column-major and linalg's matrices are row-major. A row-major m x n matrix is the
// column-major n x m matrix of its transpose in the same memory, so the kernels factor that
// transpose instead of copying: the QR of a is the LQ of its transpose (a^T = L*Q' gives
// a = Q'^T * L^T), and the SVD of a is the SVD of its transpose with the factors' roles
// swapped, whose column-major outputs are the row-major factors wanted, again in place.
package openblas

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/ebitengine/purego"
)

// ErrNoLibrary is returned (wrapped) by Load when OpenBLAS cannot be opened.
var ErrNoLibrary = errors.New("OpenBLAS not found")

// EnvLibrary names an OpenBLAS to load instead of the default names; "off" (or "gonum")
// keeps the pure-Go kernels.
const EnvLibrary = "GPUNOTES_OPENBLAS"

// libNames are tried in order: Debian's libopenblas0-* packages and upstream builds.
var libNames = []string{"libopenblas.so.0", "libopenblas.so", "libopenblasp.so.0"}

// cblas enum values.
const (
	cblasRowMajor = 101
	cblasNoTrans  = 111
	cblasTrans    = 112
	cblasUpper    = 121
	cblasNonUnit  = 131
	cblasLeft     = 141
)

var (
	loadOnce sync.Once
	loadErr  error
	config   string // openblas_get_config, e.g. "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
	// startThreads is OpenBLAS's thread count when loaded (OPENBLAS_NUM_THREADS or the cores).
	startThreads int

	cblasDgemm    func(order, ta, tb, m, n, k int32, alpha float64, a *float64, lda int32, b *float64, ldb int32, beta float64, c *float64, ldc int32)
	cblasDtrsm    func(order, side, uplo, ta, diag, m, n int32, alpha float64, a *float64, lda int32, b *float64, ldb int32)
	cblasDsyrk    func(order, uplo, trans, n, k int32, alpha float64, a *float64, lda int32, beta float64, c *float64, ldc int32)
	getConfig     func() string
	setNumThreads func(n int32)
	getNumThreads func() int32
	dgelqf        func(m, n *int32, a *float64, lda *int32, tau, work *float64, lwork, info *int32)
	dgeqrf        func(m, n *int32, a *float64, lda *int32, tau, work *float64, lwork, info *int32)
	dormlq        func(side, trans *byte, m, n, k *int32, a *float64, lda *int32, tau, c *float64, ldc *int32, work *float64, lwork, info *int32, lside, ltrans uintptr)
	dgesdd        func(jobz *byte, m, n *int32, a *float64, lda *int32, s, u *float64, ldu *int32, vt *float64, ldvt *int32, work *float64, lwork *int32, iwork, info *int32, ljobz uintptr)
	dgetrf        func(m, n *int32, a *float64, lda *int32, ipiv, info *int32)
	dgetrs        func(trans *byte, n, nrhs *int32, a *float64, lda *int32, ipiv *int32, b *float64, ldb, info *int32, ltrans uintptr)
)

// Load opens OpenBLAS and binds the calls used here. The first call's result is kept.
func Load() error {
	loadOnce.Do(func() { loadErr = load() })
	return loadErr
}

// Config returns OpenBLAS's build description (version, kernel, threading), or "" before a
// successful Load.
func Config() string { return config }

func load() (err error) {
	names := libNames
	if v := strings.TrimSpace(os.Getenv(EnvLibrary)); v != "" {
		if v == "off" || v == "gonum" {
			return fmt.Errorf("%w: %s=%s", ErrNoLibrary, EnvLibrary, v)
		}
		names = []string{v}
	}
	var lib uintptr
	var errs []string
	for _, n := range names {
		if lib, err = purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_LOCAL); err == nil {
			break
		}
		errs = append(errs, err.Error())
	}
	if lib == 0 {
		return fmt.Errorf("%w: tried %v (%s)", ErrNoLibrary, names, strings.Join(errs, "; "))
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: bind: %v", ErrNoLibrary, r)
		}
	}()
	purego.RegisterLibFunc(&cblasDgemm, lib, "cblas_dgemm")
	purego.RegisterLibFunc(&cblasDtrsm, lib, "cblas_dtrsm")
	purego.RegisterLibFunc(&cblasDsyrk, lib, "cblas_dsyrk")
	purego.RegisterLibFunc(&getConfig, lib, "openblas_get_config")
	purego.RegisterLibFunc(&setNumThreads, lib, "openblas_set_num_threads")
	purego.RegisterLibFunc(&getNumThreads, lib, "openblas_get_num_threads")
	purego.RegisterLibFunc(&dgelqf, lib, "dgelqf_")
	purego.RegisterLibFunc(&dgeqrf, lib, "dgeqrf_")
	purego.RegisterLibFunc(&dormlq, lib, "dormlq_")
	purego.RegisterLibFunc(&dgesdd, lib, "dgesdd_")
	purego.RegisterLibFunc(&dgetrf, lib, "dgetrf_")
	purego.RegisterLibFunc(&dgetrs, lib, "dgetrs_")
	purego.RegisterLibFunc(&dgetri, lib, "dgetri_")
	purego.RegisterLibFunc(&dpotrf, lib, "dpotrf_")
	purego.RegisterLibFunc(&dsyevd, lib, "dsyevd_")
	purego.RegisterLibFunc(&dgelsd, lib, "dgelsd_")
	config = strings.TrimSpace(getConfig())
	startThreads = max(1, int(getNumThreads()))
	return nil
}

// Version returns OpenBLAS's name and version, like "OpenBLAS 0.3.21", or "OpenBLAS" when its
// build description does not start with them.
func Version() string {
	if f := strings.Fields(config); len(f) >= 2 && f[0] == "OpenBLAS" {
		return f[0] + " " + f[1]
	}
	return "OpenBLAS"
}

// Threads returns the number of threads OpenBLAS uses for one call.
func Threads() int {
	if Load() != nil {
		return 0
	}
	return int(getNumThreads())
}

// SetThreads sets the number of threads OpenBLAS uses for one call.
func SetThreads(n int) error {
	if err := Load(); err != nil {
		return err
	}
	setNumThreads(int32(max(n, 1)))
	return nil
}
