package cuda

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// Gather is an input leaf whose values the device gathers before the fused kernel reads them
// (a take, see plan.Gather): element o of the box at Origin with shape Box of the take's
// result, row-major, is Src at the position p = Origin + (o's coordinates in Box), with
// p[Axis] replaced by Idx[p[Axis]], or for Along by Idx[sum_d p[d]*IdxStrides[d]].
type Gather struct {
	Src        []float64 // the operand's values as the kernel's words (EncodeWords); shared by a stage's tasks
	Idx        []int64   // indices in range, shared by a stage's tasks
	Axis       int
	Along      bool
	Origin     []int64
	Box        []int64
	SrcStrides []int64 // row-major strides of the operand
	IdxStrides []int64 // Along: row-major strides of the take's result (Idx has its shape)
}

// Len returns the number of elements the gather writes.
func (g *Gather) Len() int64 {
	n := int64(1)
	for _, b := range g.Box {
		n *= b
	}
	return n
}

// gatherCache holds, for the tasks of one RunPlan, the kernel's words of each take's operand
// (by its *plan.Gather) and of each search's sorted array (by its storage, operandKey),
// converted once.
type gatherCache map[any][]float64

// lowerGather returns the device gather of a planned block whose Gather is set, read as dtype
// dt (one word per element: not complex).
func lowerGather(b *plan.Block, dt dtype.DType, cache gatherCache) *Gather {
	pg := b.Gather
	src, ok := cache[pg]
	if !ok {
		src = EncodeWords(dtype.Convert(pg.Src, dt))
		if cache != nil {
			cache[pg] = src
		}
	}
	r := len(b.Shape)
	g := &Gather{Src: src, Idx: pg.Idx, Axis: pg.Axis, Along: pg.Along,
		Origin: make([]int64, r), Box: make([]int64, r), SrcStrides: make([]int64, r), IdxStrides: make([]int64, r)}
	ss, is := int64(1), int64(1)
	for d := r - 1; d >= 0; d-- {
		g.Origin[d], g.Box[d] = int64(b.Origin[d]), int64(b.Shape[d])
		g.SrcStrides[d], g.IdxStrides[d] = ss, is
		ss *= int64(pg.SrcShape[d])
		is *= int64(pg.Shape[d])
	}
	return g
}

// gatherName names the gather kernel of a rank, axis and kind.
func gatherName(rank, axis int, along bool) string {
	k := "take"
	if along {
		k = "along"
	}
	return fmt.Sprintf("gpn_gather_%s_r%d_a%d", k, rank, axis)
}

// gatherPTX generates the gather kernel for a rank, an axis and a kind: a grid-stride loop over
// the box's elements that splits each index into coordinates (innermost first), reads the
// index, and copies one 64-bit word. Its parameters: src, idx, out, n (the box's elements),
// then per axis the box's length, its origin, the operand's stride and the index stride.
func gatherPTX(version, target string, rank, axis int, along bool) string {
	k := newStridedPTX("gather.go", version, target, gatherName(rank, axis, along), []string{"src", "idx", "out"}, []string{"box", "org", "ss", "is"}, rank,
		"\t.reg .pred %p<2>;\n\t.reg .b32 %r<6>;\n")
	ins, reg := k.ins, k.reg
	// %rd1 src, %rd2 idx, %rd3 out (stridedPTX's other registers); %rd8 s, %rd9 flat,
	// %rd10 c, %rd11 p, %rd12 j, %rd13 address, %rd14 value; per axis: box, origin, operand
	// stride, index stride.
	ins("mov.u64 %%rd8, 0;")
	ins("mov.u64 %%rd9, 0;")
	ins("mov.u64 %%rd12, 0;")
	for d := rank - 1; d >= 0; d-- {
		k.split(d, reg(d, 0))
		ins("add.u64 %%rd11, %%rd10, %s;", reg(d, 1))
		if along {
			ins("mad.lo.u64 %%rd9, %%rd11, %s, %%rd9;", reg(d, 3))
		}
		if d == axis {
			if !along {
				ins("shl.b64 %%rd13, %%rd11, 3;")
				ins("add.u64 %%rd13, %%rd2, %%rd13;")
				ins("ld.global.nc.u64 %%rd12, [%%rd13];")
			}
			continue
		}
		ins("mad.lo.u64 %%rd8, %%rd11, %s, %%rd8;", reg(d, 2))
	}
	if along {
		ins("shl.b64 %%rd13, %%rd9, 3;")
		ins("add.u64 %%rd13, %%rd2, %%rd13;")
		ins("ld.global.nc.u64 %%rd12, [%%rd13];")
	}
	ins("mad.lo.u64 %%rd8, %%rd12, %s, %%rd8;", reg(axis, 2))
	ins("shl.b64 %%rd13, %%rd8, 3;")
	ins("add.u64 %%rd13, %%rd1, %%rd13;")
	ins("ld.global.nc.u64 %%rd14, [%%rd13];")
	ins("shl.b64 %%rd13, %s, 3;", k.o())
	ins("add.u64 %%rd13, %%rd3, %%rd13;")
	ins("st.global.u64 [%%rd13], %%rd14;")
	return k.end()
}

// gatherFunction returns the linked gather kernel of a rank, axis and kind (on the device
// goroutine).
func (d *Device) gatherFunction(rank, axis int, along bool) (driver.Function, error) {
	return d.generated(gatherName(rank, axis, along), func() (string, error) {
		return gatherPTX(d.lib.Version(), d.lib.Target(), rank, axis, along), nil
	})
}

// maxGatherBlocks bounds a gather's grid; the kernel's loop covers the rest.
const maxGatherBlocks = 1 << 16

// gather runs g on the device into a new buffer of the launch, uploading its operand and
// indices once per launch, and returns the buffer. The fused kernel that reads it follows on
// the same stream.
func (u *uploads) gather(g *Gather) (driver.DevicePtr, error) {
	n := g.Len()
	src, err := u.upload(unsafe.Pointer(&g.Src[0]), uint64(len(g.Src)*8))
	if err != nil {
		return 0, err
	}
	idx, err := u.upload(unsafe.Pointer(&g.Idx[0]), uint64(len(g.Idx)*8))
	if err != nil {
		return 0, err
	}
	out, err := u.alloc(uint64(n * 8))
	if err != nil {
		return 0, err
	}
	fn, err := u.d.gatherFunction(len(g.Box), g.Axis, g.Along)
	if err != nil {
		return 0, err
	}
	args := []uint64{uint64(src), uint64(idx), uint64(out), uint64(n)}
	for d := range g.Box {
		args = append(args, uint64(g.Box[d]), uint64(g.Origin[d]), uint64(g.SrcStrides[d]), uint64(g.IdxStrides[d]))
	}
	if err := u.d.launchWords(fn, gatherName(len(g.Box), g.Axis, g.Along), gridBlocks(n), args...); err != nil {
		return 0, fmt.Errorf("gather: %w", err)
	}
	return out, nil
}

// GatherHeld writes, on d, the 8-byte words of a source held on d at the positions of an
// index held on d into a new allocation of d's pool, which the caller owns: out[i] =
// src[idx[i]]. The source is given as pieces in order (srcs, srcRows words each) and so is the
// index (idxs, idxRows int64 words each, every one in [0, the source's length)); pieces of
// either are first joined into one buffer on the device. Nothing comes to the host. Call it
// from any goroutine.
func (d *Device) GatherHeld(ctx context.Context, srcs []driver.DevicePtr, srcRows []int64, idxs []driver.DevicePtr, idxRows []int64) (out driver.DevicePtr, n int64, err error) {
	for _, r := range idxRows {
		n += r
	}
	if n == 0 {
		return 0, 0, nil
	}
	t0 := time.Now()
	err = d.Do(ctx, func() error {
		var tmp []driver.DevicePtr
		defer func() {
			for _, p := range tmp {
				d.pool.Free(p)
			}
		}()
		join := func(ps []driver.DevicePtr, rows []int64) (driver.DevicePtr, error) {
			if len(ps) == 1 {
				return ps[0], nil
			}
			var total int64
			for _, r := range rows {
				total += r
			}
			p, err := d.pool.Alloc(uint64(max(total, 1)) * 8)
			if err != nil {
				return 0, err
			}
			tmp = append(tmp, p)
			at := p
			for i, q := range ps {
				if rows[i] == 0 {
					continue
				}
				if err := driver.MemcpyDtoDAsync(at, q, uint64(rows[i])*8, d.stream); err != nil {
					return 0, err
				}
				at += driver.DevicePtr(rows[i] * 8)
			}
			return p, nil
		}
		src, err := join(srcs, srcRows)
		if err != nil {
			return err
		}
		idx, err := join(idxs, idxRows)
		if err != nil {
			return err
		}
		fn, err := d.gatherFunction(1, 0, false)
		if err != nil {
			return err
		}
		p, err := d.pool.Alloc(uint64(n) * 8)
		if err != nil {
			return err
		}
		// One axis: box n from origin 0, operand stride 1, index stride 1.
		if err := d.launchWords(fn, gatherName(1, 0, false), gridBlocks(n), uint64(src), uint64(idx), uint64(p), uint64(n), uint64(n), 0, 1, 1); err != nil {
			d.pool.Free(p)
			return err
		}
		if err := d.stream.Synchronize(); err != nil {
			d.pool.Free(p)
			return err
		}
		out = p
		return nil
	})
	if err != nil {
		return 0, 0, fmt.Errorf("gather %d words on GPU %d: %w", n, d.Info.Index, err)
	}
	Trace("gather: %d words on GPU %d in %.4f s (held source and index)", n, d.Info.Index, time.Since(t0).Seconds())
	return out, n, nil
}
