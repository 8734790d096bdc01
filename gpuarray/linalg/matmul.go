package linalg

import (
	"context"
	"fmt"
)

// piece is a stretch of the inner axis of a matrix product that lies within one column chunk
// of A and one row chunk of B.
type piece struct {
	ac, aoff int // A's column chunk and offset in it
	bc, boff int // B's row chunk and offset in it
	n        int
}

// innerPieces cuts the inner axis at the chunk boundaries of both operands.
func innerPieces(acs, bcs []int) []piece {
	var out []piece
	ai, bi, ao, bo := 0, 0, 0, 0
	for ai < len(acs) && bi < len(bcs) {
		ra, rb := acs[ai]-ao, bcs[bi]-bo
		n := min(ra, rb)
		if n > 0 {
			out = append(out, piece{ac: ai, aoff: ao, bc: bi, boff: bo, n: n})
		}
		ao += n
		bo += n
		if ao == acs[ai] {
			ai, ao = ai+1, 0
		}
		if bi < len(bcs) && bo == bcs[bi] {
			bi, bo = bi+1, 0
		}
	}
	return out
}

// cols returns columns [c0, c0+n) of m (m itself when that is all of it).
func (m Mat) cols(c0, n int) Mat {
	if c0 == 0 && n == m.Cols {
		return m
	}
	return m.sub(0, c0, m.Rows, n)
}

// rows returns rows [r0, r0+n) of m, sharing its storage.
func (m Mat) rows(r0, n int) Mat {
	return Mat{Rows: n, Cols: m.Cols, Data: m.Data[r0*m.Cols : (r0+n)*m.Cols]}
}

// Product is the result of MatMul: the product, its chunking (A's row chunks by B's column
// chunks) and the kernels that ran.
type Product struct {
	C       Mat
	Grid    Grid
	Kernels string
}

// MatMul computes A*B with one task per output block (i, j), which sums the products of the
// blocks along the inner axis in order. The operands' chunkings of the inner axis may differ:
// the inner axis is cut at both chunkings' boundaries.
func MatMul(ctx context.Context, a, b Matrix, opt Options) (*Product, error) {
	if err := a.Grid.check("MatMul"); err != nil {
		return nil, err
	}
	if err := b.Grid.check("MatMul"); err != nil {
		return nil, err
	}
	m, k, k2, p := a.Rows(), a.Cols(), b.Rows(), b.Cols()
	if k != k2 {
		return nil, fmt.Errorf("MatMul: shapes (%d, %d) and (%d, %d) are not aligned: %d (dim 1) != %d (dim 0)", m, k, k2, p, k, k2)
	}
	kern := opt.kernels()
	g := Grid{RowChunks: a.RowChunks, ColChunks: b.ColChunks}
	c := NewMat(m, p)
	pieces := innerPieces(a.ColChunks, b.RowChunks)
	nj := len(b.ColChunks)
	ro, co := Offsets(g.RowChunks), Offsets(g.ColChunks)
	err := parallel(ctx, kern, len(g.RowChunks)*nj, opt.workers(), func(t int) error {
		i, j := t/nj, t%nj
		cij := NewMat(g.RowChunks[i], g.ColChunks[j])
		var ab, bb Mat
		lastA, lastB := -1, -1
		for _, pc := range pieces {
			if pc.ac != lastA {
				blk, err := a.block(ctx, i, pc.ac)
				if err != nil {
					return fmt.Errorf("MatMul: A %w", err)
				}
				ab, lastA = blk, pc.ac
			}
			if pc.bc != lastB {
				blk, err := b.block(ctx, pc.bc, j)
				if err != nil {
					return fmt.Errorf("MatMul: B %w", err)
				}
				bb, lastB = blk, pc.bc
			}
			if err := kern.Gemm(false, false, 1, ab.cols(pc.aoff, pc.n), bb.rows(pc.boff, pc.n), 1, cij); err != nil {
				return fmt.Errorf("MatMul: block (%d, %d): %w", i, j, err)
			}
		}
		c.put(ro[i], co[j], cij)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return &Product{C: c, Grid: g, Kernels: kern.Name()}, nil
}

// PanelProduct computes the row panel a (rows x K) times b (K x N) as MatMul computes the
// blocks of one row chunk: b's column chunks bCols one by one, each the sum, in order, of the
// products over the inner axis cut at the boundaries of a's column chunks aCols and b's row
// chunks bRows. For the same operands, chunks and kernels it gives MatMul's bits; it is what a
// lazy product's task (one row chunk) runs.
func PanelProduct(ctx context.Context, kern Kernels, a Mat, aCols []int, b Mat, bRows, bCols []int) (Mat, error) {
	if a.Cols != b.Rows || sum(aCols) != a.Cols || sum(bRows) != b.Rows || sum(bCols) != b.Cols {
		return Mat{}, fmt.Errorf("PanelProduct: a %s in column chunks %v, b %s in chunks %v x %v", a.Shape(), aCols, b.Shape(), bRows, bCols)
	}
	c := NewMat(a.Rows, b.Cols)
	pieces := innerPieces(aCols, bRows)
	ao, bo, co := Offsets(aCols), Offsets(bRows), Offsets(bCols)
	for j := range bCols {
		if err := ctx.Err(); err != nil {
			return Mat{}, err
		}
		cij := NewMat(a.Rows, bCols[j])
		for _, pc := range pieces {
			ap := a.cols(ao[pc.ac]+pc.aoff, pc.n)
			bp := b.sub(bo[pc.bc]+pc.boff, co[j], pc.n, bCols[j])
			if err := kern.Gemm(false, false, 1, ap, bp, 1, cij); err != nil {
				return Mat{}, fmt.Errorf("PanelProduct: column chunk %d: %w", j, err)
			}
		}
		c.put(0, co[j], cij)
	}
	return c, nil
}
