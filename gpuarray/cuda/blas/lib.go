package blas

import (
	"errors"
	"fmt"
	"os"
	"sync"

	"github.com/ebitengine/purego"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
)

// ErrNoLibrary is returned (wrapped) by Load when cuBLAS or cuSOLVER cannot be opened.
var ErrNoLibrary = errors.New("cuBLAS/cuSOLVER not found")

// Library names tried, newest first.
var (
	cublasNames   = []string{"libcublas.so", "libcublas.so.13", "libcublas.so.12", "libcublas.so.11"}
	cusolverNames = []string{"libcusolver.so", "libcusolver.so.12", "libcusolver.so.11", "libcusolver.so.13"}
)

type (
	handle   uintptr
	devPtr   = driver.DevicePtr
	status   int32
	operator int32
)

const (
	opN operator = 0
	opT operator = 1

	fillUpper   int32 = 1 // CUBLAS_FILL_MODE_UPPER
	sideLeft    int32 = 0 // CUBLAS_SIDE_LEFT
	diagNonUnit int32 = 0 // CUBLAS_DIAG_NON_UNIT
)

var (
	loadOnce sync.Once
	loadErr  error
	loaded   string // the libraries opened

	cublasCreate    func(h *handle) status
	cublasDestroy   func(h handle) status
	cublasSetStream func(h handle, s driver.Stream) status
	cublasDgemm     func(h handle, ta, tb operator, m, n, k int32, alpha *float64, a devPtr, lda int32, b devPtr, ldb int32, beta *float64, c devPtr, ldc int32) status
	cublasDgeam     func(h handle, ta, tb operator, m, n int32, alpha *float64, a devPtr, lda int32, beta *float64, b devPtr, ldb int32, c devPtr, ldc int32) status
	cublasDsyrk     func(h handle, uplo int32, trans operator, n, k int32, alpha *float64, a devPtr, lda int32, beta *float64, c devPtr, ldc int32) status
	cublasDtrsm     func(h handle, side, uplo int32, trans operator, diag int32, m, n int32, alpha *float64, a devPtr, lda int32, b devPtr, ldb int32) status
	cublasDtrmm     func(h handle, side, uplo int32, trans operator, diag int32, m, n int32, alpha *float64, a devPtr, lda int32, b devPtr, ldb int32, c devPtr, ldc int32) status
	cublasDdgmm     func(h handle, side int32, m, n int32, a devPtr, lda int32, x devPtr, incx int32, c devPtr, ldc int32) status

	cusolverCreate    func(h *handle) status
	cusolverDestroy   func(h handle) status
	cusolverSetStream func(h handle, s driver.Stream) status
	cusolverDgeqrfBuf func(h handle, m, n int32, a devPtr, lda int32, lwork *int32) status
	cusolverDgeqrf    func(h handle, m, n int32, a devPtr, lda int32, tau, work devPtr, lwork int32, info devPtr) status
	cusolverDormqrBuf func(h handle, side, trans int32, m, n, k int32, a devPtr, lda int32, tau, c devPtr, ldc int32, lwork *int32) status
	cusolverDormqr    func(h handle, side, trans int32, m, n, k int32, a devPtr, lda int32, tau, c devPtr, ldc int32, work devPtr, lwork int32, info devPtr) status
	cusolverDgesvdBuf func(h handle, m, n int32, lwork *int32) status
	cusolverDgesvd    func(h handle, jobu, jobvt int8, m, n int32, a devPtr, lda int32, s, u devPtr, ldu int32, vt devPtr, ldvt int32, work devPtr, lwork int32, rwork, info devPtr) status

	// The matrix functions of planned calls (matrix.go).
	cublasDcopy       func(h handle, n int32, x devPtr, incx int32, y devPtr, incy int32) status
	cublasDgetrfBatch func(h handle, n int32, aarray devPtr, lda int32, ipiv, info devPtr, batch int32) status
	cublasDgetriBatch func(h handle, n int32, aarray devPtr, lda int32, ipiv, carray devPtr, ldc int32, info devPtr, batch int32) status
	cublasDgetrsBatch func(h handle, trans operator, n, nrhs int32, aarray devPtr, lda int32, ipiv, barray devPtr, ldb int32, info *int32, batch int32) status
	cusolverDpotrfBuf func(h handle, uplo int32, n int32, a devPtr, lda int32, lwork *int32) status
	cusolverDpotrf    func(h handle, uplo int32, n int32, a devPtr, lda int32, work devPtr, lwork int32, info devPtr) status
	cusolverDgetrfBuf func(h handle, m, n int32, a devPtr, lda int32, lwork *int32) status
	cusolverDgetrf    func(h handle, m, n int32, a devPtr, lda int32, work, ipiv, info devPtr) status
	cusolverDgetrs    func(h handle, trans operator, n, nrhs int32, a devPtr, lda int32, ipiv, b devPtr, ldb int32, info devPtr) status
	cusolverDsyevdBuf func(h handle, jobz, uplo int32, n int32, a devPtr, lda int32, w devPtr, lwork *int32) status
	cusolverDsyevd    func(h handle, jobz, uplo int32, n int32, a devPtr, lda int32, w, work devPtr, lwork int32, info devPtr) status

	// Jacobi eigensolver of stacks of small symmetric matrices (batched.go).
	cusolverCreateSyevjInfo   func(p *uintptr) status
	cusolverDestroySyevjInfo  func(p uintptr) status
	cusolverDsyevjBatchedBuf  func(h handle, jobz, uplo int32, n int32, a devPtr, lda int32, w devPtr, lwork *int32, params uintptr, batch int32) status
	cusolverDsyevjBatched     func(h handle, jobz, uplo int32, n int32, a devPtr, lda int32, w, work devPtr, lwork int32, info devPtr, params uintptr, batch int32) status
	cusolverCreateGesvdjInfo  func(p *uintptr) status
	cusolverDestroyGesvdjInfo func(p uintptr) status
	cusolverDgesvdjBatchedBuf func(h handle, jobz int32, m, n int32, a devPtr, lda int32, s, u devPtr, ldu int32, v devPtr, ldv int32, lwork *int32, params uintptr, batch int32) status
	cusolverDgesvdjBatched    func(h handle, jobz int32, m, n int32, a devPtr, lda int32, s, u devPtr, ldu int32, v devPtr, ldv int32, work devPtr, lwork int32, info devPtr, params uintptr, batch int32) status

	// The SVD by polar decomposition (cusolverDnXgesvdp, 64-bit API), bound when present.
	cusolverCreateParams  func(p *uintptr) status
	cusolverDestroyParams func(p uintptr) status
	cusolverXgesvdpBuf    func(h handle, p uintptr, jobz, econ int32, m, n int64, ta int32, a devPtr, lda int64, ts int32, s devPtr, tu int32, u devPtr, ldu int64, tv int32, v devPtr, ldv int64, tc int32, devBytes, hostBytes *uint64) status
	cusolverXgesvdp       func(h handle, p uintptr, jobz, econ int32, m, n int64, ta int32, a devPtr, lda int64, ts int32, s devPtr, tu int32, u devPtr, ldu int64, tv int32, v devPtr, ldv int64, tc int32, dbuf devPtr, devBytes uint64, hbuf *byte, hostBytes uint64, info devPtr, errSigma *float64) status
	haveGesvdp            bool
)

// Load opens the CUDA driver, cuBLAS and cuSOLVER and binds the calls used here. The first
// call's result is kept. Without the libraries it returns an error wrapping ErrNoLibrary.
func Load() error {
	loadOnce.Do(func() { loadErr = load() })
	return loadErr
}

// Libraries returns the names of the libraries Load opened.
func Libraries() string { return loaded }

func open(names []string) (uintptr, string, error) {
	var errs []string
	for _, n := range names {
		lib, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err == nil {
			return lib, n, nil
		}
		errs = append(errs, err.Error())
	}
	return 0, "", fmt.Errorf("%w: tried %v on the loader path (LD_LIBRARY_PATH=%q, then the ld.so cache and /lib, /usr/lib): %v; install the CUDA toolkit's libraries or put their folder on LD_LIBRARY_PATH", ErrNoLibrary, names, os.Getenv("LD_LIBRARY_PATH"), errs)
}

// EnvCUBLAS set to "off" makes Load fail, so that matrix products run on the own GEMM kernel
// (NewOwn) even where cuBLAS is installed: for comparing the two.
const EnvCUBLAS = "GPUNOTES_CUBLAS"

func load() (err error) {
	if v := os.Getenv(EnvCUBLAS); v == "off" {
		return fmt.Errorf("%w: %s=%s", ErrNoLibrary, EnvCUBLAS, v)
	}
	if err := driver.Load(); err != nil {
		return fmt.Errorf("%w: %v", ErrNoLibrary, err)
	}
	cb, cbName, err := open(cublasNames)
	if err != nil {
		return err
	}
	cs, csName, err := open(cusolverNames)
	if err != nil {
		return err
	}
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: bind %s, %s: %v", ErrNoLibrary, cbName, csName, r)
		}
	}()
	purego.RegisterLibFunc(&cublasCreate, cb, "cublasCreate_v2")
	purego.RegisterLibFunc(&cublasDestroy, cb, "cublasDestroy_v2")
	purego.RegisterLibFunc(&cublasSetStream, cb, "cublasSetStream_v2")
	purego.RegisterLibFunc(&cublasDgemm, cb, "cublasDgemm_v2")
	purego.RegisterLibFunc(&cublasDgeam, cb, "cublasDgeam")
	purego.RegisterLibFunc(&cublasDsyrk, cb, "cublasDsyrk_v2")
	purego.RegisterLibFunc(&cublasDtrsm, cb, "cublasDtrsm_v2")
	purego.RegisterLibFunc(&cublasDtrmm, cb, "cublasDtrmm_v2")
	purego.RegisterLibFunc(&cublasDdgmm, cb, "cublasDdgmm")
	purego.RegisterLibFunc(&cublasDcopy, cb, "cublasDcopy_v2")
	purego.RegisterLibFunc(&cublasDgetrfBatch, cb, "cublasDgetrfBatched")
	purego.RegisterLibFunc(&cublasDgetriBatch, cb, "cublasDgetriBatched")
	purego.RegisterLibFunc(&cublasDgetrsBatch, cb, "cublasDgetrsBatched")
	purego.RegisterLibFunc(&cusolverDpotrfBuf, cs, "cusolverDnDpotrf_bufferSize")
	purego.RegisterLibFunc(&cusolverDpotrf, cs, "cusolverDnDpotrf")
	purego.RegisterLibFunc(&cusolverDgetrfBuf, cs, "cusolverDnDgetrf_bufferSize")
	purego.RegisterLibFunc(&cusolverDgetrf, cs, "cusolverDnDgetrf")
	purego.RegisterLibFunc(&cusolverDgetrs, cs, "cusolverDnDgetrs")
	purego.RegisterLibFunc(&cusolverDsyevdBuf, cs, "cusolverDnDsyevd_bufferSize")
	purego.RegisterLibFunc(&cusolverDsyevd, cs, "cusolverDnDsyevd")
	purego.RegisterLibFunc(&cusolverCreateSyevjInfo, cs, "cusolverDnCreateSyevjInfo")
	purego.RegisterLibFunc(&cusolverDestroySyevjInfo, cs, "cusolverDnDestroySyevjInfo")
	purego.RegisterLibFunc(&cusolverDsyevjBatchedBuf, cs, "cusolverDnDsyevjBatched_bufferSize")
	purego.RegisterLibFunc(&cusolverDsyevjBatched, cs, "cusolverDnDsyevjBatched")
	purego.RegisterLibFunc(&cusolverCreateGesvdjInfo, cs, "cusolverDnCreateGesvdjInfo")
	purego.RegisterLibFunc(&cusolverDestroyGesvdjInfo, cs, "cusolverDnDestroyGesvdjInfo")
	purego.RegisterLibFunc(&cusolverDgesvdjBatchedBuf, cs, "cusolverDnDgesvdjBatched_bufferSize")
	purego.RegisterLibFunc(&cusolverDgesvdjBatched, cs, "cusolverDnDgesvdjBatched")
	purego.RegisterLibFunc(&cusolverCreate, cs, "cusolverDnCreate")
	purego.RegisterLibFunc(&cusolverDestroy, cs, "cusolverDnDestroy")
	purego.RegisterLibFunc(&cusolverSetStream, cs, "cusolverDnSetStream")
	purego.RegisterLibFunc(&cusolverDgeqrfBuf, cs, "cusolverDnDgeqrf_bufferSize")
	purego.RegisterLibFunc(&cusolverDgeqrf, cs, "cusolverDnDgeqrf")
	purego.RegisterLibFunc(&cusolverDormqrBuf, cs, "cusolverDnDormqr_bufferSize")
	purego.RegisterLibFunc(&cusolverDormqr, cs, "cusolverDnDormqr")
	purego.RegisterLibFunc(&cusolverDgesvdBuf, cs, "cusolverDnDgesvd_bufferSize")
	purego.RegisterLibFunc(&cusolverDgesvd, cs, "cusolverDnDgesvd")
	if _, err := purego.Dlsym(cs, "cusolverDnXgesvdp"); err == nil {
		purego.RegisterLibFunc(&cusolverCreateParams, cs, "cusolverDnCreateParams")
		purego.RegisterLibFunc(&cusolverDestroyParams, cs, "cusolverDnDestroyParams")
		purego.RegisterLibFunc(&cusolverXgesvdpBuf, cs, "cusolverDnXgesvdp_bufferSize")
		purego.RegisterLibFunc(&cusolverXgesvdp, cs, "cusolverDnXgesvdp")
		haveGesvdp = true
	}
	loaded = cbName + ", " + csName
	return nil
}

// check turns a cuBLAS or cuSOLVER status into an error naming call.
func check(call string, s status) error {
	if s == 0 {
		return nil
	}
	return fmt.Errorf("%s: status %d", call, int32(s))
}
