package plan

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Joins (expr.KConcat, behind Concat, Stack, Roll, Tile) are planned piece by piece: an
// output chunk of a join is one input's chunk, so a task reads one input of each join it
// meets, and its kernel reads that input directly, with the join axis shifted by where the
// input starts. Tasks whose regions read the same pieces share one kernel; a stage over a join
// thus has a kernel per piece, and backends (CPU, GPU, cluster workers) see only ordinary
// kernels: the GPU scheduler and the cluster already run consecutive tasks of one kernel as
// one batch. No join is ever copied into a joined buffer. Where a task's region would read
// across two pieces (a join rechunked or sliced so its chunks straddle inputs), Order computes
// the join first as a stage of its own, whose chunks are its pieces' chunks.

// hasJoin reports whether lowering n reads a join that is not computed already.
func hasJoin(n *expr.Node, done map[*expr.Node]dtype.Slice) bool {
	seen := map[*expr.Node]bool{}
	var walk func(n *expr.Node) bool
	walk = func(n *expr.Node) bool {
		if seen[n] {
			return false
		}
		seen[n] = true
		switch n.Kind {
		case expr.KData, expr.KReshape, expr.KReduce, expr.KTake, expr.KTakeAlong, expr.KMask:
			return false
		}
		if _, ok := done[n]; ok {
			return false
		}
		if n.Kind == expr.KConcat {
			return true
		}
		args := n.Args
		if n.Kind == expr.KSearch {
			args = args[1:] // the sorted array is computed first and read whole
		}
		for _, a := range args {
			if walk(a) {
				return true
			}
		}
		return false
	}
	return walk(n)
}

// span returns the first and last index along source axis d that a region reads through map m.
func span(m []expr.AxisMap, d int, off, shp []int) (lo, hi int) {
	am := m[d]
	if am.Axis < 0 {
		return am.Off, am.Off
	}
	if shp[am.Axis] == 0 {
		return am.Off + am.Step*off[am.Axis], am.Off + am.Step*off[am.Axis]
	}
	a := am.Off + am.Step*off[am.Axis]
	z := am.Off + am.Step*(off[am.Axis]+shp[am.Axis]-1)
	return min(a, z), max(a, z)
}

// piece returns which input of join n a region reads through map m, and where it starts.
func piece(n *expr.Node, m []expr.AxisMap, off, shp []int) (arg, start int) {
	lo, _ := span(m, n.Axes[0], off, shp)
	return n.Piece(lo)
}

// pieceKey walks what a stage lowers for one region and returns the pieces of joins it reads
// as a key, or the first join the region reads across two pieces of.
func pieceKey(n *expr.Node, done map[*expr.Node]dtype.Slice, off, shp []int) (string, *expr.Node) {
	var b strings.Builder
	var bad *expr.Node
	seen := map[string]bool{}
	var walk func(n *expr.Node, m []expr.AxisMap)
	walk = func(n *expr.Node, m []expr.AxisMap) {
		if bad != nil {
			return
		}
		if m == nil {
			m = identity(len(n.Shape))
		}
		if _, ok := done[n]; ok {
			return
		}
		switch n.Kind {
		case expr.KView:
			walk(n.Args[0], compose(n.Map, m))
		case expr.KUnary, expr.KBinary, expr.KWhere, expr.KCast:
			for _, a := range n.Args {
				walk(a, m)
			}
		case expr.KConcat:
			key := fmt.Sprintf("%p|%s", n, mapKey(m))
			if seen[key] {
				return
			}
			seen[key] = true
			lo, hi := span(m, n.Axes[0], off, shp)
			p, start := n.Piece(lo)
			if q, _ := n.Piece(hi); q != p {
				bad = n
				return
			}
			b.WriteString(strconv.Itoa(p))
			b.WriteByte(',')
			pm := append([]expr.AxisMap(nil), m...)
			pm[n.Axes[0]].Off -= start
			walk(n.Args[p], pm)
		}
	}
	walk(n, nil)
	return b.String(), bad
}

// straddled returns a join that some task of the stage computing n would read across two of
// its pieces (nodes in staged are computed before n), or nil.
func straddled(n *expr.Node, staged map[*expr.Node]bool) *expr.Node {
	iter := n
	if n.OwnStage() { // a reduction or a call iterates over its operand
		iter = n.Args[0]
	}
	done := make(map[*expr.Node]dtype.Slice, len(staged))
	for s := range staged {
		done[s] = dtype.Slice{}
	}
	if !hasJoin(iter, done) {
		return nil
	}
	var bad *expr.Node
	eachRegion(iter.Chunks, func(off, shp []int) bool {
		_, bad = pieceKey(iter, done, off, shp)
		return bad == nil
	})
	return bad
}

// eachRegion calls f with every chunk's offset and shape of a grid, in row-major chunk order,
// until f returns false.
func eachRegion(grid [][]int, f func(off, shp []int) bool) {
	rank := len(grid)
	idx := make([]int, rank)
	off := make([]int, rank)
	shp := make([]int, rank)
	for t := 0; t < expr.NumChunks(grid); t++ {
		for ax := range idx {
			shp[ax] = grid[ax][idx[ax]]
		}
		if !f(off, shp) {
			return
		}
		for ax := rank - 1; ax >= 0; ax-- {
			off[ax] += grid[ax][idx[ax]]
			idx[ax]++
			if idx[ax] < len(grid[ax]) {
				break
			}
			idx[ax], off[ax] = 0, 0
		}
	}
}
