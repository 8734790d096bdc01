package cuda

import (
	"context"
	"fmt"
	"time"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
)

// Row gathers for package dataframe's Merge on a GPU: the output columns of a join are the
// rows of its sides' columns at the join's row pairs, int32 rows with -1 for "no row" (an
// unmatched row of a left or outer join), gathered on the device from columns held there in
// elements of 4 bytes (narrow int32, uint32, float32) or 8 bytes (words).

// rowsName names the row gather kernel of a unit (element bytes).
func rowsName(unit int) string { return fmt.Sprintf("gpn_rows_w%d", unit) }

// rowsPTX generates the row gather kernel of unit (4 or 8) bytes: a grid-stride loop over the
// n output elements, out[i] = src[idx[i]] for an int32 idx[i] >= 0, zero for a negative one.
// Its parameters: src, idx, out, n.
func rowsPTX(version, target string, unit int) string {
	k := newStridedPTX("rows.go", version, target, rowsName(unit), []string{"src", "idx", "out"}, nil, 0,
		"\t.reg .pred %p<3>;\n\t.reg .b32 %r<8>;\n")
	ins := k.ins
	shift := 3
	ld, st, val := "ld.global.nc.u64", "st.global.u64", "%rd13"
	if unit == 4 {
		shift, ld, st, val = 2, "ld.global.nc.u32", "st.global.u32", "%r6"
	}
	// %rd1 src, %rd2 idx, %rd3 out; %rd11 the index's address, %rd12 the row, %rd14 the
	// source's address, %rd15 the output's; the value in val.
	ins("shl.b64 %%rd11, %s, 2;", k.o())
	ins("add.u64 %%rd11, %%rd2, %%rd11;")
	ins("ld.global.nc.u32 %%r5, [%%rd11];")
	ins("cvt.s64.s32 %%rd12, %%r5;")
	if unit == 4 {
		ins("mov.u32 %s, 0;", val)
	} else {
		ins("mov.u64 %s, 0;", val)
	}
	ins("setp.lt.s64 %%p2, %%rd12, 0;")
	ins("@%%p2 bra STORE;")
	ins("shl.b64 %%rd14, %%rd12, %d;", shift)
	ins("add.u64 %%rd14, %%rd1, %%rd14;")
	ins("%s %s, [%%rd14];", ld, val)
	k.b.WriteString("STORE:\n")
	ins("shl.b64 %%rd15, %s, %d;", k.o(), shift)
	ins("add.u64 %%rd15, %%rd3, %%rd15;")
	ins("%s [%%rd15], %s;", st, val)
	return k.end()
}

// rowsFunction returns the linked row gather kernel of unit bytes (on the device goroutine).
func (d *Device) rowsFunction(unit int) (driver.Function, error) {
	return d.generated(rowsName(unit), func() (string, error) {
		return rowsPTX(d.lib.Version(), d.lib.Target(), unit), nil
	})
}

// paddedBytes is the bytes of an allocation of n elements of unit bytes, padded to a whole
// word (as narrow chunks are held).
func paddedBytes(n int64, unit int) uint64 { return uint64((max(n, 1)*int64(unit) + 7) / 8 * 8) }

// UploadRows copies pieces of int32 rows to d, one allocation per non-empty piece (padded to
// a whole word) in order, which the caller owns.
func (d *Device) UploadRows(ctx context.Context, rows [][]int32) ([]driver.DevicePtr, error) {
	var out []driver.DevicePtr
	n := 0
	t0 := time.Now()
	err := d.Do(ctx, func() error {
		for _, piece := range rows {
			l := len(piece)
			if l == 0 {
				continue
			}
			n += l
			ptr, err := d.pool.Alloc(paddedBytes(int64(l), 4))
			if err != nil {
				return err
			}
			out = append(out, ptr)
			// The piece's whole words as float64 words (their bits unchanged), then an odd
			// last row on its own.
			if w := l / 2; w > 0 {
				if err := d.CopyToDevice(ptr, unsafe.Slice((*float64)(unsafe.Pointer(&piece[0])), w)); err != nil {
					return err
				}
			}
			if l%2 == 1 {
				last := [2]int32{piece[l-1], 0}
				if err := driver.MemcpyHtoDAsync(ptr+driver.DevicePtr(8*(l/2)), unsafe.Pointer(&last[0]), 8, d.stream); err != nil {
					return err
				}
				if err := d.stream.Synchronize(); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		for _, p := range out {
			d.pool.Free(p)
		}
		return nil, fmt.Errorf("upload %d rows to GPU %d: %w", n, d.Info.Index, err)
	}
	Trace("rows: %d int32 rows uploaded to GPU %d in %d pieces in %.4f s", n, d.Info.Index, len(out), time.Since(t0).Seconds())
	return out, nil
}

// GatherRows writes, on d, the rows of a source held on d in elements of unit bytes (4 or 8)
// at int32 rows held on d: for each piece p of the rows (idxs[p], idxRows[p] rows), a new
// allocation out[p] (padded to a whole word, the caller owns it) with out[p][i] =
// src[idxs[p][i]], zero where the row is negative. The source is given as pieces in order
// (srcs, srcRows elements each, each from its own allocation); several are first joined into
// one buffer on the device. Rows must be below the source's length. Pieces of no rows get no
// allocation (0). Nothing comes to the host.
func (d *Device) GatherRows(ctx context.Context, srcs []driver.DevicePtr, srcRows []int64, unit int, idxs []driver.DevicePtr, idxRows []int64) ([]driver.DevicePtr, error) {
	if unit != 4 && unit != 8 {
		return nil, fmt.Errorf("gather rows: elements of %d bytes (4 or 8)", unit)
	}
	out := make([]driver.DevicePtr, len(idxs))
	var n int64
	for _, r := range idxRows {
		n += r
	}
	t0 := time.Now()
	err := d.Do(ctx, func() error {
		src := driver.DevicePtr(0)
		if len(srcs) == 1 {
			src = srcs[0]
		} else {
			var total int64
			for _, r := range srcRows {
				total += r
			}
			p, err := d.pool.Alloc(paddedBytes(total, unit))
			if err != nil {
				return err
			}
			defer d.pool.Free(p)
			at := p
			for i, q := range srcs {
				if srcRows[i] == 0 {
					continue
				}
				b := uint64(srcRows[i]) * uint64(unit)
				if err := driver.MemcpyDtoDAsync(at, q, b, d.stream); err != nil {
					return err
				}
				at += driver.DevicePtr(b)
			}
			src = p
		}
		fn, err := d.rowsFunction(unit)
		if err != nil {
			return err
		}
		for p, idx := range idxs {
			if idxRows[p] == 0 {
				continue
			}
			o, err := d.pool.Alloc(paddedBytes(idxRows[p], unit))
			if err != nil {
				return err
			}
			out[p] = o
			if err := d.launchWords(fn, rowsName(unit), gridBlocks(idxRows[p]), uint64(src), uint64(idx), uint64(o), uint64(idxRows[p])); err != nil {
				return err
			}
		}
		return d.stream.Synchronize()
	})
	if err != nil {
		for _, p := range out {
			if p != 0 {
				d.pool.Free(p)
			}
		}
		return nil, fmt.Errorf("gather %d rows of %d-byte elements on GPU %d: %w", n, unit, d.Info.Index, err)
	}
	Trace("rows: %d rows of %d-byte elements gathered on GPU %d in %.4f s", n, unit, d.Info.Index, time.Since(t0).Seconds())
	return out, nil
}
