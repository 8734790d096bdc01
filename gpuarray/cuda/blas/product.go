package blas

import (
	"context"
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// A program that imports this package runs the tasks of lazy products (expr.FnMatMul) on GPUs
// with cuBLAS: a task's row panel of a, computed on the device by its fused kernel, times b.
func init() {
	cuda.RegisterLibrary("cuBLAS", RunProduct, RunProductOnDevice, Load, func(fn expr.CallFn) bool { return fn == expr.FnMatMul })
}

// RunProduct computes one task of a lazy product on device d: the row panel in (rows x K,
// row-major, host memory) times b, the call's operand (K x N), with one cublasDgemm. Unlike
// the CPU it does not sum block by block: the GPU's bits are cuBLAS's.
func RunProduct(ctx context.Context, d *cuda.Device, c *plan.CallStep, in dtype.Slice, shape []int, operands []dtype.Slice) (dtype.Slice, []int, error) {
	x := dtype.Convert(in, dtype.Float64).Float64s()
	return runProduct(ctx, d, c, shape, cuda.OnHost(operands), func(mm *mem) (devPtr, error) { return mm.upload(x) })
}

// RunProductOnDevice is RunProduct for a panel already in d's memory (float64, row-major).
func RunProductOnDevice(ctx context.Context, d *cuda.Device, c *plan.CallStep, in driver.DevicePtr, _ dtype.DType, shape []int, operands []cuda.Operand) (dtype.Slice, []int, error) {
	return runProduct(ctx, d, c, shape, operands, func(*mem) (devPtr, error) { return in, nil })
}

func runProduct(ctx context.Context, d *cuda.Device, c *plan.CallStep, shape []int, operands []cuda.Operand, src func(*mem) (devPtr, error)) (dtype.Slice, []int, error) {
	if c.Fn != expr.FnMatMul || len(shape) != 2 || len(operands) != 1 {
		return dtype.Slice{}, nil, fmt.Errorf("cuBLAS: %v of a block of shape %s with %d operands is not a product", c.Fn, expr.ShapeString(shape), len(operands))
	}
	rows, kk, n := shape[0], shape[1], c.N
	if operands[0].Len() != kk*n {
		return dtype.Slice{}, nil, fmt.Errorf("%v: b holds %d values, want %d x %d", c.Fn, operands[0].Len(), kk, n)
	}
	if operands[0].DType.Kind() == dtype.KindComplex {
		return dtype.Slice{}, nil, fmt.Errorf("%v of complex matrices is not supported yet", c.Fn)
	}
	k, err := New(d.Info.Index)
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	out := make([]float64, rows*n)
	if len(out) > 0 {
		err = k.doCtx(ctx, func(mm *mem) error {
			da, err := src(mm)
			if err != nil {
				return err
			}
			db, held := devPtr(operands[0].Dev), operands[0].Dev != 0 // read where the GPU holds it
			if !held {
				db, held = d.Operand(operands[0].Host) // copied once for the stage's tasks
			}
			if !held {
				if db, err = mm.upload(dtype.Convert(operands[0].Host, dtype.Float64).Float64s()); err != nil {
					return err
				}
			}
			dc, err := mm.alloc(rows * n)
			if err != nil {
				return err
			}
			one, zero := 1.0, 0.0
			// Row-major C = A B is column-major C^T = B^T A^T.
			if err := check("cublasDgemm", cublasDgemm(k.cublas, opN, opN, int32(n), int32(rows), int32(kk), &one, db, int32(max(n, 1)), da, int32(max(kk, 1)), &zero, dc, int32(max(n, 1)))); err != nil {
				return err
			}
			return mm.download(out, dc)
		})
		if err != nil {
			return dtype.Slice{}, nil, fmt.Errorf("%v of a %d x %d panel and a %d x %d matrix on the GPU: %w", c.Fn, rows, kk, kk, n, err)
		}
	}
	res := dtype.OfFloat64(out)
	if c.DType != dtype.Float64 {
		res = dtype.Convert(res, c.DType)
	}
	return res, []int{rows, n}, nil
}
