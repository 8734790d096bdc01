package cuda

import (
	"fmt"
	"os"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// joinUnit is what a join kernel moves per element of a copy: size bytes (8-byte words, or
// the 1-, 2- or 4-byte elements of an array a GPU keeps in its own element size), or with
// widen a 4-byte float written as a float64 word (for a reader of 8-byte words only, such as a
// Library reading a call's further operands).
type joinUnit struct {
	size  int
	widen bool
}

var (
	joinWords = joinUnit{size: 8}
	joinWiden = joinUnit{size: 4, widen: true}
)

// heldUnit is the join unit of a held block of dtype dt: its own element size when narrow.
func heldUnit(narrow bool, dt dtype.DType) joinUnit {
	if narrow {
		return joinUnit{size: dt.Size()}
	}
	return joinWords
}

func (u joinUnit) String() string {
	if u.widen {
		return "widen"
	}
	return fmt.Sprintf("b%d", u.size)
}

// srcBytes and dstBytes are the sizes of a unit where it is read and where it is written.
func (u joinUnit) srcBytes() int64 { return int64(u.size) }

func (u joinUnit) dstBytes() int64 {
	if u.widen {
		return 8
	}
	return int64(u.size)
}

// joinCopies returns the copies that fill a held block from its pieces (plan.PieceCopies) in
// units of a join kernel: words units of 8 bytes per element (EncodeWords' format of the
// leaf's dtype), or one unit per element for narrow pieces (held in their own element size);
// axes collapsed.
func joinCopies(b *plan.Block, words int) []plan.PieceCopy {
	cs := plan.PieceCopies(b)
	for i, c := range cs {
		if words > 1 && !b.Held.Narrow {
			w := int64(words)
			c.Src, c.Dst = c.Src*w, c.Dst*w
			ss, ds := make([]int64, len(c.Shape)), make([]int64, len(c.Shape))
			for d := range c.Shape {
				ss[d], ds[d] = c.SrcStrides[d]*w, c.DstStrides[d]*w
			}
			c.Shape = append(c.Shape[:len(c.Shape):len(c.Shape)], words)
			c.SrcStrides, c.DstStrides = append(ss, 1), append(ds, 1)
		}
		cs[i] = c.Collapse()
	}
	return cs
}

// joinName names the join kernel of a rank and a unit.
func joinName(rank int, u joinUnit) string { return fmt.Sprintf("gpn_join_%s_r%d", u, rank) }

// joinPTX generates the join kernel of a rank and a unit: a grid-stride loop over a copy's
// units that splits each index into coordinates (innermost first) and copies one unit from
// src + sum c[d]*ss[d] to dst + sum c[d]*ds[d] (indexes in units). Its parameters: src, dst,
// n (the units to copy), then per axis the copy's length and the two strides.
func joinPTX(version, target string, rank int, u joinUnit) string {
	k := newStridedPTX("join.go", version, target, joinName(rank, u), []string{"src", "dst"}, []string{"len", "ss", "ds"}, rank,
		"\t.reg .pred %p<2>;\n\t.reg .b16 %rs<2>;\n\t.reg .b32 %r<6>;\n\t.reg .f32 %f<2>;\n\t.reg .f64 %fd<2>;\n")
	ins := k.ins
	// %rd1 src, %rd2 dst (stridedPTX's other registers); %rd7 source index, %rd8 destination
	// index, %rd10 address, %rd11 value; per axis: length, source stride, destination stride.
	ins("mov.u64 %%rd7, 0;")
	ins("mov.u64 %%rd8, 0;")
	for d := rank - 1; d >= 0; d-- {
		k.split(d, k.reg(d, 0))
		ins("mad.lo.u64 %%rd7, %s, %s, %%rd7;", k.coord(), k.reg(d, 1))
		ins("mad.lo.u64 %%rd8, %s, %s, %%rd8;", k.coord(), k.reg(d, 2))
	}
	shift := map[int64]int{1: 0, 2: 1, 4: 2, 8: 3}
	// The unit's register: %rs1 (1 and 2 bytes), %r5 (4), %rd11 (8), %f1 (a float widened).
	val := map[int]string{1: "%rs1", 2: "%rs1", 4: "%r5", 8: "%rd11"}[u.size]
	ins("shl.b64 %%rd10, %%rd7, %d;", shift[u.srcBytes()])
	ins("add.u64 %%rd10, %%rd1, %%rd10;")
	if u.widen {
		ins("ld.global.nc.f32 %%f1, [%%rd10];")
	} else {
		ins("ld.global.nc.u%d %s, [%%rd10];", 8*u.size, val)
	}
	ins("shl.b64 %%rd10, %%rd8, %d;", shift[u.dstBytes()])
	ins("add.u64 %%rd10, %%rd2, %%rd10;")
	if u.widen {
		ins("cvt.f64.f32 %%fd1, %%f1;")
		ins("st.global.f64 [%%rd10], %%fd1;")
	} else {
		ins("st.global.u%d [%%rd10], %s;", 8*u.size, val)
	}
	return k.end()
}

// joinFunction returns the linked join kernel of a rank and a unit (on the device goroutine).
func (d *Device) joinFunction(rank int, u joinUnit) (driver.Function, error) {
	return d.generated(joinName(rank, u), func() (string, error) {
		return joinPTX(d.lib.Version(), d.lib.Target(), rank, u), nil
	})
}

// joinInto launches the copies of a held block's pieces (joinCopies) into dst on d's stream
// (on the device goroutine); what reads dst follows on the same stream.
func (d *Device) joinInto(dst driver.DevicePtr, copies []plan.PieceCopy, u joinUnit) error {
	for _, c := range copies {
		n := c.Elements()
		if n == 0 {
			continue
		}
		fn, err := d.joinFunction(len(c.Shape), u)
		if err != nil {
			return err
		}
		args := []uint64{uint64(c.Ptr) + uint64(c.Src*u.srcBytes()), uint64(dst) + uint64(c.Dst*u.dstBytes()), uint64(n)}
		for k := range c.Shape {
			args = append(args, uint64(c.Shape[k]), uint64(c.SrcStrides[k]), uint64(c.DstStrides[k]))
		}
		if err := d.launchWords(fn, joinName(len(c.Shape), u), gridBlocks(n), args...); err != nil {
			return fmt.Errorf("join held chunks: %w", err)
		}
	}
	return nil
}

// join copies the pieces of held input h into a new buffer of the launch and returns it: the
// block as one chunk would hold it, in h's format (8-byte words, or elements of their own size
// padded to a whole word).
func (u *uploads) join(h *HeldInput) (driver.DevicePtr, error) {
	unit := h.unit
	// Tasks of a launch that read one block (a search's sorted array) share its join.
	key := fmt.Sprint(unit, h.Copies)
	if p, ok := u.joined[key]; ok {
		return p, nil
	}
	var units int64
	for _, c := range h.Copies {
		units = max(units, c.Dst+spanOf(c))
	}
	out, err := u.alloc(uint64(max((units*unit.dstBytes()+7)/8, 1) * 8))
	if err != nil {
		return 0, err
	}
	if err := u.d.joinInto(out, h.Copies, unit); err != nil {
		return 0, err
	}
	if u.joined == nil {
		u.joined = map[string]driver.DevicePtr{}
	}
	u.joined[key] = out
	return out, nil
}

// spanOf is one past the last destination unit of c, from its start.
func spanOf(c plan.PieceCopy) int64 {
	end := int64(1)
	for k, n := range c.Shape {
		if n == 0 {
			return 0
		}
		end += int64(n-1) * c.DstStrides[k]
	}
	return end
}

// joinCopyOnly (on unless GPUNOTES_GPU_JOIN_COPY=0, to measure the fused copy it saves) lets a
// kept elementwise task that only copies one block joined from held chunks keep the join's
// buffer as its output (joinAsOutput).
var joinCopyOnly = os.Getenv("GPUNOTES_GPU_JOIN_COPY") != "0"

// joinAsOutput runs task t of spec s, kept on the device, as the join of its one held block
// when that is all the task does: s reads one input leaf in 8-byte words and stores it
// unchanged (a sort's or a transform's fused values of chunks joined across the call's axis),
// and the task reads the block's elements in order from its start. The joined buffer, in the
// words the fused kernel would have written, is then the output: one copy of the values
// instead of two (the join, then the kernel's). ok is false, with nothing done, for any other
// task. Call it on the device goroutine; the join is done when it returns.
func (d *Device) joinAsOutput(s *Spec, t *Task, elems int64) (p driver.DevicePtr, ok bool, err error) {
	if !joinCopyOnly || s.Reduce != RNone || s.NarrowOut || s.Tile || s.Mirror != nil || len(s.Nodes) != 1 {
		return 0, false, nil
	}
	nd := s.Nodes[0]
	if nd.Kind != NInput || nd.Leaf != 0 || nd.Narrow || nd.Transposed || len(t.Held) < 1 || len(t.Maps) < 1 {
		return 0, false, nil
	}
	h := &t.Held[0]
	if h.Ptr == 0 || h.Copies == nil || h.Narrow || h.unit != joinWords || h.Len != elems || elems == 0 {
		return 0, false, nil
	}
	m := t.Maps[0]
	if m.Off != 0 || len(m.Strides) != len(t.Dims) {
		return 0, false, nil
	}
	stride := int64(1)
	for k := len(t.Dims) - 1; k >= 0; k-- {
		if t.Dims[k] > 1 && m.Strides[k] != stride {
			return 0, false, nil
		}
		stride *= t.Dims[k]
	}
	words := elems * int64(s.OutWords())
	var units int64
	for _, c := range h.Copies {
		units = max(units, c.Dst+spanOf(c))
	}
	if units != words {
		return 0, false, nil
	}
	if p, err = d.pool.Alloc(uint64(words * 8)); err != nil {
		return 0, false, err
	}
	if err := d.joinInto(p, h.Copies, joinWords); err != nil {
		d.pool.Free(p)
		return 0, false, err
	}
	if err := d.stream.Synchronize(); err != nil {
		d.pool.Free(p)
		return 0, false, fmt.Errorf("join held chunks: %w", err)
	}
	Trace("join of %d held pieces kept as the fused values of %d elements (no fused copy)", len(h.Copies), elems)
	return p, true, nil
}
