package blas

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
)

// OwnKernels runs matrix products on one GPU with gpunotes' own tiled kernel (gpn_dgemm_nn of
// kernels/lib.cu), for machines with the NVIDIA driver but without cuBLAS. QR and SVD of
// blocks go to the CPU kernels it was given. It implements linalg.Kernels.
type OwnKernels struct {
	dev  *cuda.Device
	cpu  linalg.Kernels
	name string
}

var _ linalg.Kernels = (*OwnKernels)(nil)

// NewOwn opens GPU index for the own GEMM kernel; QR and SVD run on cpu.
func NewOwn(index int, cpu linalg.Kernels) (*OwnKernels, error) {
	dev, err := cuda.Open(index)
	if err != nil {
		return nil, fmt.Errorf("own GEMM kernel: %w", err)
	}
	// Link the kernels now, so that a missing or broken library is an error here.
	err = dev.Do(context.Background(), func() error {
		for _, n := range []string{"gpn_dgemm_nn", "gpn_transpose2d"} {
			if _, err := dev.LibFunction(n); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("own GEMM kernel on GPU %d: %w", index, err)
	}
	return &OwnKernels{dev: dev, cpu: cpu,
		name: fmt.Sprintf("gpu %d %s (own GEMM kernel; QR and SVD on %s)", index, dev.Info.Name, cpu.Name())}, nil
}

// Name says which kernels run.
func (k *OwnKernels) Name() string { return k.name }

// QR factors a on the CPU kernels.
func (k *OwnKernels) QR(a linalg.Mat) (linalg.Factor, error) { return k.cpu.QR(a) }

// SVD factors a on the CPU kernels.
func (k *OwnKernels) SVD(a linalg.Mat) (linalg.Mat, []float64, linalg.Mat, error) {
	return k.cpu.SVD(a)
}

// gemmMaxRows bounds the rows of C per launch: the grid's y dimension (65535) of 64-row tiles.
const gemmMaxRows = 65535 * 64

// Gemm computes c = alpha*op(a)*op(b) + beta*c on the device: transposed operands are
// transposed there first (gpn_transpose2d), then gpn_dgemm_nn runs on row-major operands.
func (k *OwnKernels) Gemm(transA, transB bool, alpha float64, a, b linalg.Mat, beta float64, c linalg.Mat) error {
	m, kk, n, work, err := linalg.GemmCheck(transA, transB, a, b, beta, c)
	if err != nil || !work {
		return err
	}
	err = k.dev.Do(context.Background(), func() error {
		mm := &mem{dev: k.dev, s: k.dev.Stream()}
		defer mm.free()
		da, err := k.operand(mm, a, transA)
		if err != nil {
			return err
		}
		db, err := k.operand(mm, b, transB)
		if err != nil {
			return err
		}
		var dc devPtr
		if beta == 0 {
			dc, err = mm.alloc(m * n)
		} else {
			dc, err = mm.upload(c.Data)
		}
		if err != nil {
			return err
		}
		if err := k.gemmNN(m, n, kk, alpha, da, max(kk, 1), db, n, beta, dc, n); err != nil {
			return err
		}
		return mm.download(c.Data, dc)
	})
	if err != nil {
		return fmt.Errorf("Gemm (%d x %d x %d) on the GPU: %w", m, kk, n, err)
	}
	return nil
}

// gemmNN launches gpn_dgemm_nn on row-major device operands with leading dimensions.
func (k *OwnKernels) gemmNN(m, n, kk int, alpha float64, da devPtr, lda64 int, db devPtr, ldb64 int, beta float64, dc devPtr, ldc64 int) error {
	f, err := k.dev.LibFunction("gpn_dgemm_nn")
	if err != nil {
		return err
	}
	lda, ldb, ldc := int64(lda64), int64(ldb64), int64(ldc64)
	n64, k64 := int64(n), int64(kk)
	for r0 := 0; r0 < m; r0 += gemmMaxRows {
		rows := int64(min(gemmMaxRows, m-r0))
		pa, pc := da+devPtr(int64(r0)*lda*8), dc+devPtr(int64(r0)*ldc*8)
		grid := [3]uint32{uint32((n + 63) / 64), uint32((rows + 63) / 64), 1}
		params := []unsafe.Pointer{unsafe.Pointer(&rows), unsafe.Pointer(&n64), unsafe.Pointer(&k64), unsafe.Pointer(&alpha),
			unsafe.Pointer(&pa), unsafe.Pointer(&lda), unsafe.Pointer(&db), unsafe.Pointer(&ldb), unsafe.Pointer(&beta),
			unsafe.Pointer(&pc), unsafe.Pointer(&ldc)}
		if err := f.Launch(grid, [3]uint32{256, 1, 1}, 0, k.dev.Stream(), params); err != nil {
			return fmt.Errorf("gpn_dgemm_nn: %w", err)
		}
	}
	return nil
}

// operand uploads x, transposed on the device when trans is set, as a row-major op(x).
func (k *OwnKernels) operand(mm *mem, x linalg.Mat, trans bool) (devPtr, error) {
	p, err := mm.upload(x.Data)
	if err != nil || !trans {
		return p, err
	}
	t, err := mm.alloc(len(x.Data))
	if err != nil {
		return 0, err
	}
	f, err := k.dev.LibFunction("gpn_transpose2d")
	if err != nil {
		return 0, err
	}
	rows, cols := int64(x.Rows), int64(x.Cols)
	if (rows+31)/32 > 65535 {
		return 0, fmt.Errorf("a %s operand is too tall to transpose on the device (at most %d rows)", x.Shape(), 65535*32)
	}
	grid := [3]uint32{uint32((cols + 31) / 32), uint32((rows + 31) / 32), 1}
	params := []unsafe.Pointer{unsafe.Pointer(&t), unsafe.Pointer(&p), unsafe.Pointer(&rows), unsafe.Pointer(&cols)}
	if err := f.Launch(grid, [3]uint32{32, 8, 1}, 0, k.dev.Stream(), params); err != nil {
		return 0, fmt.Errorf("gpn_transpose2d: %w", err)
	}
	return t, nil
}
