package linalg

import (
	"context"
	"fmt"
	"runtime"
	"sync"
)

// Options tune the chunked algorithms. The zero value is ready to use.
type Options struct {
	// Kernels runs the dense work on blocks; nil means CPU().
	Kernels Kernels
	// Workers bounds the blocks processed at once; 0 means GOMAXPROCS.
	Workers int
	// LeafRows groups consecutive row chunks into TSQR leaves of at least this many rows
	// (square blocks waste work in TSQR: the stacked R factors are as large as the input).
	// 0 means one leaf per row chunk.
	LeafRows int
	// FanIn is the number of R factors stacked per node of the TSQR tree; 0 means 16.
	FanIn int
}

func (o Options) kernels() Kernels {
	if o.Kernels == nil {
		return CPU()
	}
	return o.Kernels
}

func (o Options) workers() int {
	if o.Workers > 0 {
		return o.Workers
	}
	return runtime.GOMAXPROCS(0)
}

// parallel runs f(0..n-1) on at most workers goroutines and returns the first error; it stops
// handing out work after an error or when ctx is done. Kernels that run their own threads
// are told how many calls may run at once.
func parallel(ctx context.Context, kern Kernels, n, workers int, f func(i int) error) error {
	if n == 0 {
		return nil
	}
	workers = max(1, min(workers, n))
	if c, ok := kern.(Concurrent); ok {
		c.SetConcurrency(workers)
		defer c.SetConcurrency(1)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		mu    sync.Mutex
		first error
		next  int
		wg    sync.WaitGroup
	)
	take := func() int {
		mu.Lock()
		defer mu.Unlock()
		if first != nil || ctx.Err() != nil || next >= n {
			return -1
		}
		next++
		return next - 1
	}
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := take(); i >= 0; i = take() {
				if err := f(i); err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					cancel()
				}
			}
		}()
	}
	wg.Wait()
	if first != nil {
		return first
	}
	return ctx.Err()
}

// node is a node of the TSQR tree. A leaf covers rows [row0, row0+rows) of the input; an inner
// node stacks the R factors of its children.
type node struct {
	row0, rows int // leaves: the input rows; inner nodes: the stacked rows
	children   []*node
	f          Factor
	k          int // rows of this node's R
	r          Mat // this node's R, until its parent has stacked it
}

// QR is the TSQR factorization A = Q*R of a tall-and-skinny chunked matrix: R is k x n
// (k = min(m, n)) and Q, m x k with orthonormal columns, is kept implicitly as a tree of
// Householder factors and applied on demand.
type QR struct {
	R       Mat
	Kernels string // the kernels that ran
	m, n    int
	leaves  []*node
	all     []*node // every node with a factor, for Release
	root    *node
	kern    Kernels
	workers int
	mu      sync.Mutex
}

// TSQR factors a, which must have a single column of chunks, by a QR of each leaf (a run of
// row chunks), then QRs of the stacked R factors up a tree of fan-in opt.FanIn. The tree's
// shape depends only on the chunk sizes.
func TSQR(ctx context.Context, a Matrix, opt Options) (q *QR, err error) {
	if err := a.Grid.check("TSQR"); err != nil {
		return nil, err
	}
	if len(a.ColChunks) != 1 {
		return nil, fmt.Errorf("TSQR of a (%d, %d) matrix with chunks %v: it needs a single column of chunks (%d columns per chunk); rechunk its columns into one chunk",
			a.Rows(), a.Cols(), a.Grid, a.Cols())
	}
	kern := opt.kernels()
	n := a.Cols()
	q = &QR{m: a.Rows(), n: n, kern: kern, workers: opt.workers(), Kernels: kern.Name()}
	defer func() {
		if err != nil {
			q.Release()
		}
	}()
	// Leaves: runs of consecutive row chunks of at least LeafRows rows.
	type span struct{ c0, c1, row0, rows int }
	var spans []span
	ro := Offsets(a.RowChunks)
	for c := 0; c < len(a.RowChunks); {
		s := span{c0: c, row0: ro[c]}
		for c < len(a.RowChunks) && (c == s.c0 || s.rows < opt.LeafRows) {
			s.rows += a.RowChunks[c]
			c++
		}
		// Fold a short tail into the previous leaf.
		if opt.LeafRows > 0 && s.rows < opt.LeafRows/2 && len(spans) > 0 {
			p := &spans[len(spans)-1]
			p.c1, p.rows = c, p.rows+s.rows
			continue
		}
		s.c1 = c
		spans = append(spans, s)
	}
	q.leaves = make([]*node, len(spans))
	for i, s := range spans {
		q.leaves[i] = &node{row0: s.row0, rows: s.rows}
	}
	err = parallel(ctx, q.kern, len(spans), q.workers, func(i int) error {
		s := spans[i]
		var blk Mat
		if s.c1-s.c0 == 1 {
			b, err := a.block(ctx, s.c0, 0)
			if err != nil {
				return fmt.Errorf("TSQR: %w", err)
			}
			blk = b
		} else {
			blk = NewMat(s.rows, n)
			for c := s.c0; c < s.c1; c++ {
				b, err := a.block(ctx, c, 0)
				if err != nil {
					return fmt.Errorf("TSQR: %w", err)
				}
				blk.put(ro[c]-s.row0, 0, b)
			}
		}
		return q.factor(q.leaves[i], blk)
	})
	if err != nil {
		return nil, err
	}
	fan := opt.FanIn
	if fan < 2 {
		fan = 16
	}
	level := q.leaves
	for len(level) > 1 {
		next := make([]*node, 0, (len(level)+fan-1)/fan)
		for i := 0; i < len(level); i += fan {
			next = append(next, &node{children: level[i:min(i+fan, len(level))]})
		}
		err = parallel(ctx, q.kern, len(next), q.workers, func(i int) error {
			nd := next[i]
			for _, c := range nd.children {
				nd.rows += c.k
			}
			st := NewMat(nd.rows, n)
			off := 0
			for _, c := range nd.children {
				st.put(off, 0, c.r)
				off += c.k
				c.r = Mat{}
			}
			return q.factor(nd, st)
		})
		if err != nil {
			return nil, err
		}
		level = next
	}
	q.root = level[0]
	q.R, q.root.r = q.root.r, Mat{}
	return q, nil
}

// factor runs the QR of one tree node's matrix.
func (q *QR) factor(nd *node, blk Mat) error {
	f, err := q.kern.QR(blk)
	if err != nil {
		return fmt.Errorf("TSQR: QR of a %s block at row %d: %w", blk.Shape(), nd.row0, err)
	}
	nd.f = f
	q.mu.Lock()
	q.all = append(q.all, nd)
	q.mu.Unlock()
	r, err := f.R()
	if err != nil {
		return fmt.Errorf("TSQR: R of a %s block: %w", blk.Shape(), err)
	}
	nd.r, nd.k = r, r.Rows
	return nil
}

// Rows returns m, the rows of A and Q.
func (q *QR) Rows() int { return q.m }

// K returns the columns of the thin Q (and rows of R): min(m, n).
func (q *QR) K() int { return q.R.Rows }

// ApplyQ writes Q*w into dst (m x p, row-major), where w is k x p. dst is cut along the
// leaves' rows, so it may be the storage of a whole chunked result.
func (q *QR) ApplyQ(ctx context.Context, w Mat, dst []float64) error {
	if q.root == nil {
		return fmt.Errorf("ApplyQ: the factorization was released")
	}
	if err := w.Check("ApplyQ"); err != nil {
		return err
	}
	if w.Rows != q.K() {
		return fmt.Errorf("ApplyQ: Q is (%d, %d), the operand is %s", q.m, q.K(), w.Shape())
	}
	p := w.Cols
	if len(dst) != q.m*p {
		return fmt.Errorf("ApplyQ: destination holds %d elements, want %d x %d", len(dst), q.m, p)
	}
	// Top-down: each inner node turns its W into its children's W's.
	ws := map[*node]Mat{q.root: w}
	level := []*node{q.root}
	for len(level[0].children) > 0 {
		var next []*node
		for _, nd := range level {
			next = append(next, nd.children...)
		}
		var mu sync.Mutex
		err := parallel(ctx, q.kern, len(level), q.workers, func(i int) error {
			nd := level[i]
			mu.Lock()
			wn := ws[nd]
			mu.Unlock()
			c := NewMat(nd.rows, p)
			copy(c.Data, wn.Data)
			if err := nd.f.ApplyQ(c); err != nil {
				return fmt.Errorf("ApplyQ: tree node: %w", err)
			}
			off := 0
			mu.Lock()
			defer mu.Unlock()
			for _, ch := range nd.children {
				ws[ch] = Mat{Rows: ch.k, Cols: p, Data: c.Data[off*p : (off+ch.k)*p]}
				off += ch.k
			}
			return nil
		})
		if err != nil {
			return err
		}
		level = next
	}
	return parallel(ctx, q.kern, len(q.leaves), q.workers, func(i int) error {
		lf := q.leaves[i]
		c := Mat{Rows: lf.rows, Cols: p, Data: dst[lf.row0*p : (lf.row0+lf.rows)*p]}
		wl := ws[lf]
		if ok, err := applyThin(q.kern, lf.f, wl, c); ok || err != nil {
			if err != nil {
				return fmt.Errorf("ApplyQ: leaf at row %d: %w", lf.row0, err)
			}
			return nil
		}
		copy(c.Data, wl.Data)
		clear(c.Data[len(wl.Data):])
		if err := lf.f.ApplyQ(c); err != nil {
			return fmt.Errorf("ApplyQ: leaf at row %d: %w", lf.row0, err)
		}
		return nil
	})
}

// Q returns the thin Q (m x k) explicitly.
func (q *QR) Q(ctx context.Context) (Mat, error) {
	k := q.K()
	id := NewMat(k, k)
	for i := 0; i < k; i++ {
		id.Data[i*k+i] = 1
	}
	out := NewMat(q.m, k)
	if err := q.ApplyQ(ctx, id, out.Data); err != nil {
		return Mat{}, err
	}
	return out, nil
}

// Release frees the factors (device memory with GPU kernels).
func (q *QR) Release() {
	if q == nil {
		return
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, nd := range q.all {
		nd.f.Release()
		nd.f = nil
	}
	q.all, q.root = nil, nil
}
