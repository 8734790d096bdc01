package plan

import (
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// CallStep is a kernel's library call (expr.Call): whoever runs a task computes the kernel's
// fused values over the task's region, as for an elementwise kernel, in float64 or complex128
// (the kernel's result instruction casts to one of them), then passes them through the call
// along Axis, where the region spans the whole axis. The output has the call's length along
// Axis (Call.OutLen) and dtype DType.
type CallStep struct {
	expr.Call
	DType dtype.DType
}

// InputDType returns the dtype a call's fused values are computed in.
func InputDType(in dtype.DType) dtype.DType {
	if in.Kind() == dtype.KindComplex {
		return dtype.Complex128
	}
	return dtype.Float64
}

// castForCall makes the kernel's result the dtype its call reads, and returns the result.
func (k *Kernel) castForCall(res int) int {
	want := InputDType(k.Instrs[res].DType)
	if k.Instrs[res].DType == want {
		return res
	}
	k.Instrs = append(k.Instrs, Instr{Code: Cast, DType: want, Args: []int{res}})
	return len(k.Instrs) - 1
}

// Elementwise returns a copy of a call kernel without its call: what computes the values the
// call reads.
func (k *Kernel) Elementwise() *Kernel {
	c := *k
	c.Call = nil
	return &c
}
