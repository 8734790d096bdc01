package cpu

import (
	"context"
	"fmt"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/linalg"
	"github.com/gpunotes/gpunotes/gpuarray/linalg/openblas"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

var (
	gemmOnce sync.Once
	gemmKern linalg.Kernels
)

// Gemm returns the kernels a product's task runs on the CPU: OpenBLAS where it loads, else
// gonum (linalg.CPU), as the eager linear algebra chooses them.
func Gemm() linalg.Kernels {
	gemmOnce.Do(func() {
		gemmKern = linalg.CPU()
		if k, err := openblas.New(); err == nil {
			gemmKern = k
		}
	})
	return gemmKern
}

// GemmLibrary names the library of Gemm: OpenBLAS with its version, or gonum.
func GemmLibrary() string {
	if _, ok := Gemm().(*openblas.Kernels); ok {
		return openblas.Version()
	}
	return "gonum"
}

// applyMatMul computes a task of a lazy product (expr.FnMatMul): its row panel of a (rows x K,
// in) times its panel of b (the call's operand, K x c.N), block by block in the order of
// c.Blocks, so the values are those of linalg.MatMul on the same chunks.
func applyMatMul(ctx context.Context, c *plan.CallStep, in dtype.Slice, shape []int, operands []dtype.Slice) (dtype.Slice, []int, error) {
	if len(shape) != 2 || len(operands) != 1 || len(c.Blocks) != 3 {
		return dtype.Slice{}, nil, fmt.Errorf("%v: a block of shape %s with %d operands and %d block lists", c.Fn, expr.ShapeString(shape), len(operands), len(c.Blocks))
	}
	rows, k := shape[0], shape[1]
	if operands[0].Len() != k*c.N {
		return dtype.Slice{}, nil, fmt.Errorf("%v: b holds %d values, want %d x %d", c.Fn, operands[0].Len(), k, c.N)
	}
	for _, v := range []dtype.Slice{in, operands[0]} {
		if v.DType().Kind() == dtype.KindComplex {
			return dtype.Slice{}, nil, fmt.Errorf("%v of complex matrices is not supported yet", c.Fn)
		}
	}
	a := linalg.Mat{Rows: rows, Cols: k, Data: dtype.Convert(in, dtype.Float64).Float64s()}
	b := linalg.Mat{Rows: k, Cols: c.N, Data: dtype.Convert(operands[0], dtype.Float64).Float64s()}
	p, err := linalg.PanelProduct(ctx, Gemm(), a, c.Blocks[0], b, c.Blocks[1], c.Blocks[2])
	if err != nil {
		return dtype.Slice{}, nil, err
	}
	res := dtype.OfFloat64(p.Data)
	if c.DType != dtype.Float64 {
		res = dtype.Convert(res, c.DType)
	}
	return res, []int{rows, c.N}, nil
}
