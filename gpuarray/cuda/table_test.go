package cuda

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/optable"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/kernels"
)

// tableKernel is a kernel applying op to float64 normals (bools from x > 0 for logical ops),
// summed, as the planner would emit it.
func tableKernel(o optable.Op, op expr.Op) *plan.Kernel {
	leaf := func(key uint32) plan.Instr {
		return plan.Instr{Code: plan.Random, DType: expr.Float64, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1, Key: [2]uint32{key, 0}},
			Src: []int{64}, Map: []expr.AxisMap{{Axis: 0, Step: 1}}}
	}
	k := &plan.Kernel{Shape: []int{64}, Instrs: []plan.Instr{leaf(1), leaf(2)}}
	args := []int{0, 1}
	in := expr.Float64
	if o.Rule == optable.Logical {
		k.Instrs = append(k.Instrs, plan.Instr{Code: plan.Const, DType: expr.Float64},
			plan.Instr{Code: plan.Binary, DType: expr.Bool, Op: expr.OpGt, Args: []int{0, 2}},
			plan.Instr{Code: plan.Binary, DType: expr.Bool, Op: expr.OpLt, Args: []int{1, 2}})
		args, in = []int{3, 4}, expr.Bool
	}
	out := in
	switch o.Rule {
	case optable.Test, optable.Logical:
		out = expr.Bool
	}
	code := plan.Unary
	if o.Arity == 2 {
		code = plan.Binary
	}
	k.Instrs = append(k.Instrs, plan.Instr{Code: code, DType: out, Op: op, Args: args[:o.Arity]})
	k.Instrs = append(k.Instrs, plan.Instr{Code: plan.Cast, DType: expr.Float64, Args: []int{len(k.Instrs) - 1}})
	k.Result = len(k.Instrs) - 1
	k.Reduce = &plan.Reduction{Red: expr.Sum, Axes: []int{0}}
	return k
}

// TestTableOpsLowerToTheGPU: every op of the table with a PTX body lowers to the fused kernel
// and generates PTX with the real device library (no host fallback); the others are refused
// by Lower with their name, so the GPU backend runs them on the host and says so, as the
// README's table states.
func TestTableOpsLowerToTheGPU(t *testing.T) {
	lib, err := kernels.LibPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	op := expr.OpGe + 1
	for _, o := range optable.Ops {
		if op.String() != o.Name {
			t.Fatalf("op %d is %v, the table says %s (run go generate ./gpuarray/optable)", op, op, o.Name)
		}
		k := tableKernel(o, op)
		s, _, err := Lower(k)
		switch {
		case o.PTX == "" && err == nil:
			t.Errorf("%s: lowered to the GPU without a PTX body", o.Name)
		case o.PTX == "" && !strings.Contains(err.Error(), o.Name):
			t.Errorf("%s: refused without naming it: %v", o.Name, err)
		case o.PTX != "" && err != nil:
			t.Errorf("%s: has a PTX body but does not lower: %v", o.Name, err)
		case o.PTX != "":
			ptx, _, err := GeneratePTX(s, string(lib))
			if err != nil {
				t.Errorf("%s: %v", o.Name, err)
			} else if first := strings.Fields(strings.Split(o.PTX, "\n")[0])[0]; !strings.Contains(ptx, first) {
				t.Errorf("%s: the PTX lacks %q", o.Name, first)
			}
		}
		op++
	}
}

// TestMaskCountLowersToTheGPU: the sum of a comparison (an int64 count of bools) runs in the
// fused kernel; other integer values do not.
func TestMaskCountLowersToTheGPU(t *testing.T) {
	k := tableKernel(optable.Op{Name: "x", Arity: 2, Rule: optable.Test}, expr.OpGt)
	k.Instrs[len(k.Instrs)-1].DType = expr.Int64 // the planner's cast before an integer sum
	if _, _, err := Lower(k); err != nil {
		t.Fatalf("count of a mask: %v", err)
	}
	k.Instrs = append(k.Instrs, plan.Instr{Code: plan.Binary, DType: expr.Int64, Op: expr.OpAdd, Args: []int{len(k.Instrs) - 1, len(k.Instrs) - 1}})
	k.Result = len(k.Instrs) - 1
	if _, _, err := Lower(k); err == nil || !strings.Contains(err.Error(), "int64") {
		t.Fatalf("integer arithmetic lowered to the GPU: %v", err)
	}
}
