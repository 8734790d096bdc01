package cuda

import (
	"context"
	"fmt"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// operandKey names a host slice by its storage: while a stage runs, the slices of its tasks'
// operand blocks are alive and unchanged, so the same storage is the same values.
type operandKey struct {
	p unsafe.Pointer
	n int
}

func keyOf(s dtype.Slice) (operandKey, bool) {
	b := s.Bytes()
	if len(b) == 0 {
		return operandKey{}, false
	}
	return operandKey{unsafe.Pointer(&b[0]), len(b)}, true
}

// stageOperands copies a call stage's further operands (the values every task reads whole: a
// product's b) to d once, as float64 elements, for the library's device runner to read
// (Operand) while the stage's tasks run there, instead of uploading them for every task. The
// returned release frees them.
func (d *Device) stageOperands(ctx context.Context, ops []dtype.Slice) (release func(), err error) {
	var keys []operandKey
	release = func() {
		d.opMu.Lock()
		var ptrs []driver.DevicePtr
		for _, k := range keys {
			ptrs = append(ptrs, d.operands[k])
			delete(d.operands, k)
		}
		d.opMu.Unlock()
		_ = d.Do(context.Background(), func() error {
			for _, p := range ptrs {
				d.pool.Free(p)
			}
			return nil
		})
	}
	for _, s := range ops {
		k, ok := keyOf(s)
		if !ok {
			continue
		}
		d.opMu.Lock()
		_, have := d.operands[k]
		d.opMu.Unlock()
		if have {
			continue
		}
		words := s.ToFloat64()
		var p driver.DevicePtr
		err := d.Do(ctx, func() error {
			var err error
			if p, err = d.pool.Alloc(uint64(len(words)) * 8); err != nil {
				return err
			}
			if err := d.CopyToDevice(p, words); err != nil {
				d.pool.Free(p)
				return err
			}
			return nil
		})
		if err != nil {
			release()
			return nil, fmt.Errorf("cuda: a call's operand of %d values: %w", len(words), err)
		}
		d.opMu.Lock()
		if d.operands == nil {
			d.operands = map[operandKey]driver.DevicePtr{}
		}
		d.operands[k] = p
		d.opMu.Unlock()
		keys = append(keys, k)
	}
	return release, nil
}

// Operand returns where d holds a call's operand s (as float64 elements) while its stage runs
// here, or false: then the runner copies it itself.
func (d *Device) Operand(s dtype.Slice) (driver.DevicePtr, bool) {
	k, ok := keyOf(s)
	if !ok {
		return 0, false
	}
	d.opMu.Lock()
	defer d.opMu.Unlock()
	p, ok := d.operands[k]
	return p, ok
}
