package cuda

import (
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/optable"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/kernels"
)

// tableKernel is a kernel applying op to float64 normals cast to dtype in (bools from x > 0
// for logical ops and bools), then cast to float64 and summed, as the planner would emit it.
func tableKernel(o optable.Op, op expr.Op, in expr.DType) *plan.Kernel {
	leaf := func(key uint32) plan.Instr {
		return plan.Instr{Code: plan.Random, DType: expr.Float64, Rand: expr.RandSpec{Dist: expr.Normal, P1: 1, Key: [2]uint32{key, 0}},
			Src: []int{64}, Map: []expr.AxisMap{{Axis: 0, Step: 1}}}
	}
	k := &plan.Kernel{Shape: []int{64}, Instrs: []plan.Instr{leaf(1), leaf(2)}}
	args := []int{0, 1}
	switch {
	case o.Rule == optable.Logical || in == expr.Bool:
		k.Instrs = append(k.Instrs, plan.Instr{Code: plan.Const, DType: expr.Float64},
			plan.Instr{Code: plan.Binary, DType: expr.Bool, Op: expr.OpGt, Args: []int{0, 2}},
			plan.Instr{Code: plan.Binary, DType: expr.Bool, Op: expr.OpLt, Args: []int{1, 2}})
		args, in = []int{3, 4}, expr.Bool
	case in != expr.Float64:
		k.Instrs = append(k.Instrs, plan.Instr{Code: plan.Cast, DType: in, Args: []int{0}}, plan.Instr{Code: plan.Cast, DType: in, Args: []int{1}})
		args = []int{2, 3}
	}
	out := in
	switch o.Rule {
	case optable.Test, optable.Logical:
		out = expr.Bool
	case optable.Part:
		out = in.Real()
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

// TestTableOpsLowerToTheGPU: every op of the table lowers to the fused kernel, and generates
// PTX with the real device library, for each kind of operand it has a GPU body for (floats,
// or bools for the logical and bitwise ops; integers; complex numbers); for the others Lower
// refuses with the op's name, so the GPU backend runs them on the host and says so, as the
// README's table states.
func TestTableOpsLowerToTheGPU(t *testing.T) {
	lib, err := libraryPTX(kernels.SM90) // GPUNOTES_KERNELS_PTX: a library not yet embedded
	if err != nil {
		t.Fatal(err)
	}
	// The ops' own bodies, before predBools turns tests of bool words into predicate logic.
	defer ptx.SetOptions(ptx.CurrentOptions())
	setPTX(func(o *ptx.Options) { o.Pred = false })
	op := expr.OpGe + 1
	for _, o := range optable.Ops {
		if op.String() != o.Name {
			t.Fatalf("op %d is %v, the table says %s (run go generate ./gpuarray/optable)", op, op, o.Name)
		}
		float := expr.Float64
		if o.Rule == optable.Bits {
			float = expr.Bool
		}
		for _, c := range []struct {
			in   expr.DType
			body string
			cpu  bool
		}{{float, o.PTX, o.Float != "" || o.Rule == optable.Logical || o.Rule == optable.Bits}, {expr.Int32, o.PTXInt, o.Int != "" && o.Rule != optable.Float && o.Rule != optable.Logical}, {expr.Uint16, o.PTXInt, o.Int != "" && o.Rule != optable.Float && o.Rule != optable.Logical}, {expr.Complex128, o.PTXComplex, o.Complex != ""}} {
			if !c.cpu {
				continue
			}
			s, _, err := Lower(tableKernel(o, op, c.in))
			switch {
			case c.body == "" && err == nil:
				t.Errorf("%s of %v: lowered to the GPU without a PTX body", o.Name, c.in)
			case c.body == "" && !strings.Contains(err.Error(), o.Name):
				t.Errorf("%s of %v: refused without naming it: %v", o.Name, c.in, err)
			case c.body != "" && err != nil:
				t.Errorf("%s of %v: has a PTX body but does not lower: %v", o.Name, c.in, err)
			case c.body != "":
				text, _, err := GeneratePTX(s, string(lib))
				first := strings.Fields(strings.Split(c.body, "\n")[0])
				want, _, _ := strings.Cut(first[0], "{") // the mnemonic, without placeholders
				if want == "call" {
					want = first[1]
				}
				if err != nil {
					t.Errorf("%s of %v: %v", o.Name, c.in, err)
				} else if !strings.Contains(text, want) {
					t.Errorf("%s of %v: the PTX lacks %q", o.Name, c.in, want)
				}
			}
		}
		op++
	}
}

// TestMaskCountLowersToTheGPU: the sum of a comparison (an int64 count of bools) runs in the
// fused kernel, and so does an integer sum of integer arithmetic on it (integer accumulators);
// a variance of int64 values (NumPy's rules cast them to float64 first) does not.
func TestMaskCountLowersToTheGPU(t *testing.T) {
	k := tableKernel(optable.Op{Name: "x", Arity: 2, Rule: optable.Test}, expr.OpGt, expr.Float64)
	k.Instrs[len(k.Instrs)-1].DType = expr.Int64 // the planner's cast before an integer sum
	if _, _, err := Lower(k); err != nil {
		t.Fatalf("count of a mask: %v", err)
	}
	k.Instrs = append(k.Instrs, plan.Instr{Code: plan.Binary, DType: expr.Int64, Op: expr.OpAdd, Args: []int{len(k.Instrs) - 1, len(k.Instrs) - 1}})
	k.Result = len(k.Instrs) - 1
	if _, _, err := Lower(k); err != nil {
		t.Fatalf("integer sum of integer arithmetic: %v", err)
	}
	k.Reduce.Red = expr.Var
	if _, _, err := Lower(k); err == nil || !strings.Contains(err.Error(), "int64") {
		t.Fatalf("a variance of int64 values lowered to the GPU: %v", err)
	}
}

// TestCoreOpsLowerToTheGPU: the first ops (optable.Core) are expr's first constants in the
// table's order, and each lowers to the fused kernel and generates PTX with the real device
// Library through its row's body for every kind of operand it has one for (float, bool
// results of bools, integers, complex numbers); a kind the CPU computes without a GPU body
// is refused with the op's name (the host path), and its row says why in Host.
func TestCoreOpsLowerToTheGPU(t *testing.T) {
	lib, err := libraryPTX(kernels.SM90)
	if err != nil {
		t.Fatal(err)
	}
	for i, o := range optable.Core {
		op := expr.Op(i)
		if op.String() != o.Short {
			t.Fatalf("op %d is %v, the table says %s (run go generate ./gpuarray/optable)", op, op, o.Short)
		}
		row := o
		if op.Comparison() {
			row.Rule = optable.Test // a bool result, for tableKernel
		}
		cases := []struct {
			in   expr.DType
			body string
			cpu  bool
		}{{expr.Float64, o.PTX, true}, {expr.Int32, o.PTXInt, o.Int != "" || op.Comparison()},
			{expr.Uint16, o.PTXInt, o.Int != "" || op.Comparison()}, {expr.Complex128, o.PTXComplex, o.Complex != "" || op.Comparison()}}
		if o.PTXBool != "" {
			cases = append(cases, struct {
				in   expr.DType
				body string
				cpu  bool
			}{expr.Bool, o.PTXBool, true})
		}
		for _, c := range cases {
			if !c.cpu {
				continue
			}
			// Hand-written lanes (Special): integer abs, complex comparisons.
			special := c.body == "" && (op == expr.OpAbs && c.in.IsInteger() || op.Comparison() && c.in == expr.Complex128)
			s, _, err := Lower(tableKernel(row, op, c.in))
			switch {
			case c.body == "" && !special && err == nil:
				t.Errorf("%s of %v: lowered to the GPU without a PTX body", o.Name, c.in)
			case c.body == "" && !special && !strings.Contains(err.Error(), o.Short):
				t.Errorf("%s of %v: refused without naming it: %v", o.Name, c.in, err)
			case c.body == "" && !special && o.Host == "":
				t.Errorf("%s of %v: runs on the host and Host gives no reason", o.Name, c.in)
			case (c.body != "" || special) && err != nil:
				t.Errorf("%s of %v: has a PTX body but does not lower: %v", o.Name, c.in, err)
			case c.body != "" || special:
				text, _, err := GeneratePTX(s, string(lib))
				if err != nil {
					t.Errorf("%s of %v: %v", o.Name, c.in, err)
					continue
				}
				if c.body == "" {
					continue
				}
				first := strings.Fields(strings.Split(c.body, "\n")[0])
				want, _, _ := strings.Cut(first[0], "{")
				if want == "call" {
					want = first[1]
				}
				if !strings.Contains(text, want) {
					t.Errorf("%s of %v: the PTX lacks %q", o.Name, c.in, want)
				}
			}
		}
	}
}
