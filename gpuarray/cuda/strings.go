package cuda

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
)

// Strings on a GPU (issue 31): a string column in device memory in Arrow's large_string
// layout (n+1 int64 offsets, the bytes), and the string kernels of ptx.StrPTX over it, one
// thread per string. Their outputs are new allocations of the device's pool: int64 words
// (lengths, slots) or one byte per string padded to a word (bools, as narrow bool arrays are
// held).

// StrColumn is a string column in one device's memory: N strings, string i the bytes
// [Off[i], Off[i+1]) of Data.
type StrColumn struct {
	Off, Data driver.DevicePtr
	N, Bytes  int64
}

// strBlocks is the grid of a string kernel over n strings, one thread each.
func strBlocks(n int64) (uint32, error) {
	b := (n + BlockSize - 1) / BlockSize
	if b > math.MaxInt32 {
		return 0, fmt.Errorf("%d strings: %d blocks", n, b)
	}
	return uint32(b), nil
}

// UploadStrings copies a string column (offsets: n+1 nondecreasing int64s into data, the
// bytes; the bytes past the last offset are left behind) into new allocations of d's pool.
// FreeStrings gives them back.
func (d *Device) UploadStrings(ctx context.Context, offsets []int64, data []byte) (StrColumn, error) {
	if len(offsets) == 0 || offsets[0] < 0 || offsets[0] > offsets[len(offsets)-1] || offsets[len(offsets)-1] > int64(len(data)) {
		return StrColumn{}, fmt.Errorf("cuda: strings of %d offsets over %d bytes", len(offsets), len(data))
	}
	data = data[:offsets[len(offsets)-1]]
	c := StrColumn{N: int64(len(offsets) - 1), Bytes: int64(len(data))}
	err := d.Do(ctx, func() error {
		var err error
		if c.Off, err = d.pool.Alloc(uint64(len(offsets)) * 8); err != nil {
			return err
		}
		if c.Data, err = d.pool.Alloc(uint64(max(len(data), 1)+7) &^ 7); err != nil {
			d.pool.Free(c.Off)
			return err
		}
		if err := driver.MemcpyHtoD(c.Off, unsafe.Pointer(&offsets[0]), uint64(len(offsets))*8); err != nil {
			return err
		}
		if len(data) > 0 {
			return driver.MemcpyHtoD(c.Data, unsafe.Pointer(&data[0]), uint64(len(data)))
		}
		return nil
	})
	if err != nil {
		d.FreeStrings(c)
		return StrColumn{}, fmt.Errorf("upload %d strings (%d bytes) to GPU %d: %w", c.N, c.Bytes, d.Info.Index, err)
	}
	return c, nil
}

// DownloadStrings copies c back to the host.
func (d *Device) DownloadStrings(ctx context.Context, c StrColumn) (offsets []int64, data []byte, err error) {
	offsets, data = make([]int64, c.N+1), make([]byte, c.Bytes)
	err = d.Do(ctx, func() error {
		if err := d.stream.Synchronize(); err != nil {
			return err
		}
		if err := driver.MemcpyDtoH(unsafe.Pointer(&offsets[0]), c.Off, uint64(len(offsets))*8); err != nil {
			return err
		}
		if len(data) > 0 {
			return driver.MemcpyDtoH(unsafe.Pointer(&data[0]), c.Data, uint64(len(data)))
		}
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("download %d strings from GPU %d: %w", c.N, d.Info.Index, err)
	}
	return offsets, data, nil
}

// FreeStrings gives c's allocations back (the cleanup of a collected column may call it from
// any goroutine).
func (d *Device) FreeStrings(c StrColumn) {
	var ps []driver.DevicePtr
	for _, p := range []driver.DevicePtr{c.Off, c.Data} {
		if p != 0 {
			ps = append(ps, p)
		}
	}
	if len(ps) > 0 {
		d.pool.FreeLater(ps...)
	}
}

// strKernel links op's kernel on d (on the device goroutine).
func (d *Device) strKernel(op ptx.StrOp) (driver.Function, error) {
	return d.generated(ptx.StrName(op), func() (string, error) {
		s, _, err := ptx.StrPTX(d.lib.Version(), d.lib.Target(), op)
		return s, err
	})
}

// StrOutBytes is the size of op's output over n strings: 8-byte words for StrLen and
// StrEncode's slots, else a byte per string padded to a whole word.
func StrOutBytes(op ptx.StrOp, n int64) uint64 {
	if op == ptx.StrLen || op == ptx.StrEncode {
		return uint64(max(n, 1)) * 8
	}
	return uint64(max(n, 1)+7) &^ 7
}

// StrMatch runs a string kernel of a column and a literal (ptx.StrLen, which ignores it,
// ptx.StrEq, StrStartsWith, StrEndsWith, StrContains) over c on d and returns its output, a
// new allocation of d's pool that the caller owns (StrOutBytes).
func (d *Device) StrMatch(ctx context.Context, op ptx.StrOp, c StrColumn, lit string) (driver.DevicePtr, error) {
	if op == ptx.StrEqCols || op == ptx.StrEncode {
		return 0, fmt.Errorf("cuda: StrMatch of %v (internal)", op)
	}
	var out driver.DevicePtr
	err := d.Do(ctx, func() error {
		f, err := d.strKernel(op)
		if err != nil {
			return err
		}
		blocks, err := strBlocks(c.N)
		if err != nil {
			return err
		}
		p, err := d.pool.Alloc(StrOutBytes(op, c.N))
		if err != nil {
			return err
		}
		if c.N == 0 {
			out = p
			return nil
		}
		args := []uint64{uint64(c.Off), uint64(c.Data), uint64(c.N), uint64(p)}
		var litp driver.DevicePtr
		if op != ptx.StrLen {
			if litp, err = d.pool.Alloc(uint64(len(lit)+8) &^ 7); err != nil {
				d.pool.Free(p)
				return err
			}
			defer d.pool.Free(litp)
			if len(lit) > 0 {
				if err := driver.MemcpyHtoD(litp, unsafe.Pointer(unsafe.StringData(lit)), uint64(len(lit))); err != nil {
					d.pool.Free(p)
					return err
				}
			}
			args = []uint64{uint64(c.Off), uint64(c.Data), uint64(c.N), uint64(litp), uint64(len(lit)), uint64(p)}
		}
		if err := d.launchWords(f, ptx.StrName(op), blocks, args...); err != nil {
			d.pool.Free(p)
			return err
		}
		// The literal is freed on return: wait for the kernel that reads it.
		if err := d.stream.Synchronize(); err != nil {
			d.pool.Free(p)
			return fmt.Errorf("kernel %s: %w", ptx.StrName(op), err)
		}
		out = p
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("str.%v of %d strings on GPU %d: %w", op, c.N, d.Info.Index, err)
	}
	return out, nil
}

// StrEqCols compares row i's strings of two columns on d, string ia[i] of a with string ib[i]
// of b (ia, ib: n int64 positions in d's memory), and returns a byte per row (StrOutBytes), a
// new allocation of d's pool.
func (d *Device) StrEqCols(ctx context.Context, a StrColumn, ia driver.DevicePtr, b StrColumn, ib driver.DevicePtr, n int64) (driver.DevicePtr, error) {
	var out driver.DevicePtr
	err := d.Do(ctx, func() error {
		f, err := d.strKernel(ptx.StrEqCols)
		if err != nil {
			return err
		}
		blocks, err := strBlocks(n)
		if err != nil {
			return err
		}
		p, err := d.pool.Alloc(StrOutBytes(ptx.StrEqCols, n))
		if err != nil {
			return err
		}
		if n > 0 {
			if err := d.launchWords(f, ptx.StrName(ptx.StrEqCols), blocks, uint64(a.Off), uint64(a.Data), uint64(ia), uint64(b.Off), uint64(b.Data), uint64(ib), uint64(n), uint64(p)); err != nil {
				d.pool.Free(p)
				return err
			}
			if err := d.stream.Synchronize(); err != nil {
				d.pool.Free(p)
				return fmt.Errorf("kernel %s: %w", ptx.StrName(ptx.StrEqCols), err)
			}
		}
		out = p
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("string equality of %d rows on GPU %d: %w", n, d.Info.Index, err)
	}
	return out, nil
}

// StrTableSize is the hash table StrEncode uses for n strings: the power of two at least 2n
// (and 2), so that a probe always ends.
func StrTableSize(n int64) int64 {
	return int64(1) << max(1, bits.Len64(uint64(max(n, 1)))+1)
}

// StrEncode dictionary-encodes c on d: each string is hashed into a table of StrTableSize(N)
// words (ptx.StrEncode), which it returns with each string's slot; equal strings have equal
// slots, and a taken slot holds 1 + the index of the string that took it. Both are new
// allocations of d's pool that the caller owns.
func (d *Device) StrEncode(ctx context.Context, c StrColumn) (table, slot driver.DevicePtr, tsize int64, err error) {
	tsize = StrTableSize(c.N)
	err = d.Do(ctx, func() error {
		f, err := d.strKernel(ptx.StrEncode)
		if err != nil {
			return err
		}
		blocks, err := strBlocks(c.N)
		if err != nil {
			return err
		}
		if table, err = d.pool.Alloc(uint64(tsize) * 8); err != nil {
			return err
		}
		if slot, err = d.pool.Alloc(StrOutBytes(ptx.StrEncode, c.N)); err != nil {
			return err
		}
		if err := driver.MemsetD32Async(table, 0, uint64(tsize)*2, d.stream); err != nil {
			return err
		}
		if c.N > 0 {
			if err := d.launchWords(f, ptx.StrName(ptx.StrEncode), blocks, uint64(c.Off), uint64(c.Data), uint64(c.N), uint64(table), uint64(tsize), uint64(slot)); err != nil {
				return err
			}
		}
		return d.stream.Synchronize()
	})
	if err != nil {
		for _, p := range []driver.DevicePtr{table, slot} {
			if p != 0 {
				d.pool.FreeLater(p)
			}
		}
		return 0, 0, 0, fmt.Errorf("dictionary-encode %d strings on GPU %d: %w", c.N, d.Info.Index, err)
	}
	return table, slot, tsize, nil
}
