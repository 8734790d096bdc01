package blas

import (
	"context"
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
)

// DeviceGemm is a matrix product on operands already on the device, for products whose
// blocks are generated and kept there (MatMulBlocks). Both *Kernels (cuBLAS) and
// *OwnKernels implement it.
type DeviceGemm interface {
	// Device returns the GPU the kernels run on.
	Device() *cuda.Device
	// Name says which kernels run.
	Name() string
	// gemmDev computes c = alpha*a*b + beta*c for row-major device operands with leading
	// dimensions: a is m x k, b k x n, c m x n. It runs on the device goroutine.
	gemmDev(m, n, k int, alpha float64, a devPtr, lda int, b devPtr, ldb int, beta float64, c devPtr, ldc int) error
}

// Device returns the GPU the kernels run on.
func (k *Kernels) Device() *cuda.Device { return k.dev }

// Device returns the GPU the kernels run on.
func (k *OwnKernels) Device() *cuda.Device { return k.dev }

func (k *Kernels) gemmDev(m, n, kk int, alpha float64, a devPtr, lda int, b devPtr, ldb int, beta float64, c devPtr, ldc int) error {
	// Row-major C = A*B is column-major C^T = B^T * A^T: the operands swap.
	return check("cublasDgemm", cublasDgemm(k.cublas, opN, opN, int32(n), int32(m), int32(kk), &alpha, b, int32(ldb), a, int32(lda), &beta, c, int32(ldc)))
}

func (k *OwnKernels) gemmDev(m, n, kk int, alpha float64, a devPtr, lda int, b devPtr, ldb int, beta float64, c devPtr, ldc int) error {
	return k.gemmNN(m, n, kk, alpha, a, lda, b, ldb, beta, c, ldc)
}

// Blocks is a chunked row-major matrix whose blocks are on the device: block (i, j), of
// RowChunks[i] x ColChunks[j] elements stored row-major, is at Ptr[i*len(ColChunks)+j], with
// rows LD elements apart (0: packed, ColChunks[j] apart), so blocks may be views into wider
// row panels.
type Blocks struct {
	linalg.Grid
	Ptr []driver.DevicePtr
	LD  int
}

// ld returns the row stride of the blocks in block column j (at least 1, as BLAS wants).
func (b Blocks) ld(j int) int {
	if b.LD > 0 {
		return b.LD
	}
	return max(b.ColChunks[j], 1)
}

// PanelBytes returns the device memory MatMulBlocks needs besides its operands: two row
// panels of C, as tall as the tallest row chunk of a.
func PanelBytes(a, b Blocks) uint64 {
	rows := 0
	for _, r := range a.RowChunks {
		rows = max(rows, r)
	}
	return 2 * uint64(rows) * uint64(b.Cols()) * 8
}

// checkProduct checks that a*b can be formed from the blocks.
func checkProduct(a, b Blocks) error {
	if len(a.ColChunks) != len(b.RowChunks) {
		return fmt.Errorf("a has %d column chunks, b %d row chunks", len(a.ColChunks), len(b.RowChunks))
	}
	for i, n := range a.ColChunks {
		if b.RowChunks[i] != n {
			return fmt.Errorf("a's column chunks %v differ from b's row chunks %v", a.ColChunks, b.RowChunks)
		}
	}
	if len(a.Ptr) != len(a.RowChunks)*len(a.ColChunks) || len(b.Ptr) != len(b.RowChunks)*len(b.ColChunks) {
		return fmt.Errorf("block pointers do not match the chunk grids")
	}
	return nil
}

// gemmPanel computes row panel i of C = a*b (RowChunks[i] x b.Cols(), row-major, packed) into
// panel, block by block with the inner blocks summed in order. It runs on the device goroutine.
func gemmPanel(g DeviceGemm, a, b Blocks, i int, panel devPtr) error {
	rows, p := a.RowChunks[i], b.Cols()
	nk, nj := len(a.ColChunks), len(b.ColChunks)
	if nk == 0 && rows > 0 && p > 0 { // no inner axis: C is zero
		if err := driver.MemsetD32Async(panel, 0, uint64(rows*p)*2, g.Device().Stream()); err != nil {
			return err
		}
	}
	col := 0
	for j, cols := range b.ColChunks {
		cij := panel + devPtr(col*8)
		for kk, inner := range a.ColChunks {
			if rows == 0 || cols == 0 || (inner == 0 && kk > 0) {
				continue
			}
			beta := 1.0
			if kk == 0 {
				beta = 0
			}
			if err := g.gemmDev(rows, cols, inner, 1, a.Ptr[i*nk+kk], a.ld(kk), b.Ptr[kk*nj+j], b.ld(j), beta, cij, p); err != nil {
				return fmt.Errorf("block (%d, %d), inner block %d: %w", i, j, kk, err)
			}
		}
		col += cols
	}
	return nil
}

// MatMulBlocks computes c = a*b, where a's column chunks equal b's row chunks, into c (host,
// row-major, rows of a by columns of b). Each row panel of C is computed on the device
// (gemmPanel) and downloaded into its place in c on a second stream while the next panel's
// products run. progress, if not nil, is called after each panel with the panels done.
func MatMulBlocks(ctx context.Context, g DeviceGemm, a, b Blocks, c []float64, progress func(done, total int)) error {
	if err := checkProduct(a, b); err != nil {
		return fmt.Errorf("MatMulBlocks: %w", err)
	}
	m, p := a.Rows(), b.Cols()
	if len(c) != m*p {
		return fmt.Errorf("MatMulBlocks: c holds %d elements, want %d x %d", len(c), m, p)
	}
	if m == 0 || p == 0 {
		return nil
	}
	dev := g.Device()
	maxRows := 0
	for _, r := range a.RowChunks {
		maxRows = max(maxRows, r)
	}
	var panels [2]devPtr
	err := dev.Do(ctx, func() error {
		for i := range panels {
			var err error
			if panels[i], err = dev.Pool().Alloc(uint64(maxRows*p) * 8); err != nil {
				return err
			}
		}
		return nil
	})
	defer func() {
		_ = dev.Do(context.Background(), func() error {
			for _, pp := range panels {
				if pp != 0 {
					dev.Pool().Free(pp)
				}
			}
			return nil
		})
	}()
	if err != nil {
		return fmt.Errorf("panels of C on GPU %d: %w", dev.Info.Index, err)
	}
	rowOff := linalg.Offsets(a.RowChunks)
	// download copies finished panel i into c, on the copy stream.
	download := func(i int) error {
		cs, err := dev.CopyStream()
		if err != nil {
			return err
		}
		dst := c[rowOff[i]*p : rowOff[i+1]*p]
		return dev.CopyToHostOn(cs, dst, panels[i%2])
	}
	for i := range a.RowChunks {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := dev.Do(ctx, func() error {
			if err := gemmPanel(g, a, b, i, panels[i%2]); err != nil {
				return err
			}
			// The previous panel moves to the host while this one's products run.
			if i > 0 {
				if err := download(i - 1); err != nil {
					return fmt.Errorf("download panel %d: %w", i-1, err)
				}
			}
			return dev.Stream().Synchronize()
		})
		if err != nil {
			return fmt.Errorf("row panel %d of C on GPU %d (%s): %w", i, dev.Info.Index, g.Name(), err)
		}
		if progress != nil && i > 0 {
			progress(i, len(a.RowChunks))
		}
	}
	last := len(a.RowChunks) - 1
	if err := dev.Do(ctx, func() error { return download(last) }); err != nil {
		return fmt.Errorf("download panel %d of C on GPU %d: %w", last, dev.Info.Index, err)
	}
	if progress != nil {
		progress(last+1, len(a.RowChunks))
	}
	return nil
}

// MatMulPanels computes c = a*b, where a's column chunks equal b's row chunks, and leaves C on
// the device: one row-major panel (RowChunks[i] x b.Cols()) per row chunk of a, allocated from
// the device's pool; the caller owns them (Pool.Free, or Pool.FreeLater). progress, if not
// nil, is called after each panel with the panels done.
func MatMulPanels(ctx context.Context, g DeviceGemm, a, b Blocks, progress func(done, total int)) ([]devPtr, error) {
	if err := checkProduct(a, b); err != nil {
		return nil, fmt.Errorf("MatMulPanels: %w", err)
	}
	dev := g.Device()
	p := b.Cols()
	panels := make([]devPtr, len(a.RowChunks))
	free := func() {
		_ = dev.Do(context.Background(), func() error {
			for _, pp := range panels {
				if pp != 0 {
					dev.Pool().Free(pp)
				}
			}
			return nil
		})
	}
	for i, rows := range a.RowChunks {
		err := dev.Do(ctx, func() error {
			var err error
			if panels[i], err = dev.Pool().Alloc(uint64(max(rows*p, 1)) * 8); err != nil {
				return err
			}
			if err := gemmPanel(g, a, b, i, panels[i]); err != nil {
				return err
			}
			// One panel in flight at a time, so a cancelled product stops within a panel.
			return dev.Stream().Synchronize()
		})
		if err != nil {
			free()
			return nil, fmt.Errorf("row panel %d of C on GPU %d (%s): %w", i, dev.Info.Index, g.Name(), err)
		}
		if progress != nil {
			progress(i+1, len(a.RowChunks))
		}
	}
	return panels, nil
}
