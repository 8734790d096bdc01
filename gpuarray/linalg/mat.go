package linalg

import (
	"context"
	"fmt"
)

// Mat is a dense row-major matrix: element (i, j) is Data[i*Cols+j].
type Mat struct {
	Rows, Cols int
	Data       []float64
}

// NewMat returns a zero Mat of r rows and c columns.
func NewMat(r, c int) Mat { return Mat{Rows: r, Cols: c, Data: make([]float64, r*c)} }

// At returns element (i, j).
func (m Mat) At(i, j int) float64 { return m.Data[i*m.Cols+j] }

// Shape returns the shape as text, like (3, 4).
func (m Mat) Shape() string { return fmt.Sprintf("(%d, %d)", m.Rows, m.Cols) }

// Check verifies that Data holds Rows*Cols elements; what prefixes the error.
func (m Mat) Check(what string) error {
	if m.Rows < 0 || m.Cols < 0 || len(m.Data) != m.Rows*m.Cols {
		return fmt.Errorf("%s: matrix %s holds %d elements, want %d", what, m.Shape(), len(m.Data), m.Rows*m.Cols)
	}
	return nil
}

// T returns the transpose of m as a new matrix.
func (m Mat) T() Mat {
	t := NewMat(m.Cols, m.Rows)
	m.TransposeInto(t)
	return t
}

// TransposeInto writes m's transpose into t, which must be m.Cols x m.Rows (in 32 x 32 tiles,
// so both sides stay in cache).
func (m Mat) TransposeInto(t Mat) {
	const b = 32
	for i0 := 0; i0 < m.Rows; i0 += b {
		for j0 := 0; j0 < m.Cols; j0 += b {
			for i := i0; i < min(i0+b, m.Rows); i++ {
				row := m.Data[i*m.Cols:]
				for j := j0; j < min(j0+b, m.Cols); j++ {
					t.Data[j*m.Rows+i] = row[j]
				}
			}
		}
	}
}

// Grid is the chunking of a matrix: the sizes of its row chunks and of its column chunks.
type Grid struct {
	RowChunks, ColChunks []int
}

// Rows returns the number of rows.
func (g Grid) Rows() int { return sum(g.RowChunks) }

// Cols returns the number of columns.
func (g Grid) Cols() int { return sum(g.ColChunks) }

// String formats the grid like dask's chunks: ((1000, 1000), (500,)).
func (g Grid) String() string {
	return fmt.Sprintf("(%s, %s)", tuple(g.RowChunks), tuple(g.ColChunks))
}

func tuple(v []int) string {
	s := "("
	for i, x := range v {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprint(x)
	}
	if len(v) == 1 {
		s += ","
	}
	return s + ")"
}

func (g Grid) check(what string) error {
	if len(g.RowChunks) == 0 || len(g.ColChunks) == 0 {
		return fmt.Errorf("%s: grid %v has no chunks on an axis", what, g)
	}
	for _, cs := range [][]int{g.RowChunks, g.ColChunks} {
		for _, c := range cs {
			if c < 0 {
				return fmt.Errorf("%s: negative chunk size in grid %v", what, g)
			}
		}
	}
	return nil
}

// BlockFunc returns block (i, j) of a matrix: row chunk i, column chunk j. The caller owns the
// returned matrix and may overwrite it.
type BlockFunc func(ctx context.Context, i, j int) (Mat, error)

// Matrix is a chunked matrix whose blocks are produced on demand.
type Matrix struct {
	Grid
	Block BlockFunc
}

// FromMat returns a Matrix over m cut into chunks of at most rowChunk by colChunk; each
// block is a fresh copy.
func FromMat(m Mat, rowChunk, colChunk int) (Matrix, error) {
	if err := m.Check("FromMat"); err != nil {
		return Matrix{}, err
	}
	if rowChunk <= 0 || colChunk <= 0 {
		return Matrix{}, fmt.Errorf("FromMat: chunk sizes %d, %d must be positive", rowChunk, colChunk)
	}
	g := Grid{RowChunks: split(m.Rows, rowChunk), ColChunks: split(m.Cols, colChunk)}
	return FromGrid(m, g)
}

// FromGrid returns a Matrix over m with the chunking g.
func FromGrid(m Mat, g Grid) (Matrix, error) {
	if err := m.Check("FromGrid"); err != nil {
		return Matrix{}, err
	}
	if err := g.check("FromGrid"); err != nil {
		return Matrix{}, err
	}
	if g.Rows() != m.Rows || g.Cols() != m.Cols {
		return Matrix{}, fmt.Errorf("FromGrid: grid %v is for shape (%d, %d), the matrix is %s", g, g.Rows(), g.Cols(), m.Shape())
	}
	ro, co := Offsets(g.RowChunks), Offsets(g.ColChunks)
	return Matrix{Grid: g, Block: func(_ context.Context, i, j int) (Mat, error) {
		return m.sub(ro[i], co[j], g.RowChunks[i], g.ColChunks[j]), nil
	}}, nil
}

// sub copies the r x c submatrix at (i0, j0).
func (m Mat) sub(i0, j0, r, c int) Mat {
	out := NewMat(r, c)
	for i := 0; i < r; i++ {
		copy(out.Data[i*c:(i+1)*c], m.Data[(i0+i)*m.Cols+j0:])
	}
	return out
}

// put copies s into m at (i0, j0).
func (m Mat) put(i0, j0 int, s Mat) {
	for i := 0; i < s.Rows; i++ {
		copy(m.Data[(i0+i)*m.Cols+j0:(i0+i)*m.Cols+j0+s.Cols], s.Data[i*s.Cols:(i+1)*s.Cols])
	}
}

// Gather materializes the whole matrix.
func (a Matrix) Gather(ctx context.Context) (Mat, error) {
	if err := a.Grid.check("Gather"); err != nil {
		return Mat{}, err
	}
	out := NewMat(a.Rows(), a.Cols())
	ro, co := Offsets(a.RowChunks), Offsets(a.ColChunks)
	for i := range a.RowChunks {
		for j := range a.ColChunks {
			b, err := a.block(ctx, i, j)
			if err != nil {
				return Mat{}, err
			}
			out.put(ro[i], co[j], b)
		}
	}
	return out, nil
}

// block fetches block (i, j) and checks its shape.
func (a Matrix) block(ctx context.Context, i, j int) (Mat, error) {
	if err := ctx.Err(); err != nil {
		return Mat{}, err
	}
	b, err := a.Block(ctx, i, j)
	if err != nil {
		return Mat{}, fmt.Errorf("block (%d, %d): %w", i, j, err)
	}
	if b.Rows != a.RowChunks[i] || b.Cols != a.ColChunks[j] || len(b.Data) != b.Rows*b.Cols {
		return Mat{}, fmt.Errorf("block (%d, %d) has shape %s (%d elements), the grid %v says (%d, %d)",
			i, j, b.Shape(), len(b.Data), a.Grid, a.RowChunks[i], a.ColChunks[j])
	}
	return b, nil
}

// Transpose returns the matrix transposed, block by block.
func (a Matrix) Transpose() Matrix {
	return Matrix{Grid: Grid{RowChunks: a.ColChunks, ColChunks: a.RowChunks},
		Block: func(ctx context.Context, i, j int) (Mat, error) {
			b, err := a.Block(ctx, j, i)
			if err != nil {
				return Mat{}, err
			}
			return b.T(), nil
		}}
}

func split(n, c int) []int {
	if n == 0 {
		return []int{0}
	}
	var out []int
	for n > 0 {
		k := min(n, c)
		out = append(out, k)
		n -= k
	}
	return out
}

// Offsets returns the start of each chunk of a chunking cs, and the total at the end.
func Offsets(cs []int) []int {
	o := make([]int, len(cs)+1)
	for i, c := range cs {
		o[i+1] = o[i] + c
	}
	return o
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}
