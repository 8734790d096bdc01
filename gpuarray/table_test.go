package gpuarray

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cpu"
	"github.com/gpunotes/gpunotes/gpuarray/cuda"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/optable"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
	"github.com/gpunotes/gpunotes/internal/testenv"
)

// tableDTypes are the operand dtypes each rule is tried with.
var tableDTypes = map[optable.Rule][]DType{
	optable.Same:    {Float64, Float32, Int8, Int32, Int64, Uint8, Uint64, Complex128},
	optable.Float:   {Float64, Float32, Int16, Int64, Complex128},
	optable.Test:    {Float64, Float32, Int32, Uint16, Complex128},
	optable.Logical: {Bool, Float64, Int8, Complex128},
	optable.Bits:    {Bool, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64},
	optable.Shift:   {Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64},
	optable.Part:    {Float64, Float32, Int32, Complex128},
}

// tableCall applies row o of the table through its gpuarray function.
func tableCall(o optable.Op, xs ...*Array) *Array {
	if o.Arity == 1 {
		return unaryOf(tableOp(o), xs[0])
	}
	return binaryOf(tableOp(o), xs[0], xs[1])
}

func tableOp(o optable.Op) expr.Op {
	for op := expr.OpGe + 1; ; op++ {
		if op.String() == o.Name {
			return op
		}
		if _, ok := op.Generated(); !ok {
			return 0
		}
	}
}

// TestTableAgainstNumPy checks every op of the table against NumPy for the dtypes its rule
// takes, on random shapes and chunkings with NaN, ±Inf, -0 and subnormals among the values:
// bit equality where the row says the op is exact, 1e-12 relative (1e-5 for 32-bit floats)
// otherwise. Dtypes the op does not define must fail to build, with an error naming them.
func TestTableAgainstNumPy(t *testing.T) {
	py := testenv.Python(t)
	r := rand.New(rand.NewPCG(20, 23))
	var cases []*dtypeCase
	for _, o := range optable.Ops {
		if tableOp(o) == 0 {
			t.Fatalf("%s: no expr.Op (run go generate ./gpuarray/optable)", o.Name)
		}
		built := 0
		for _, dt := range tableDTypes[o.Rule] {
			for trial := 0; trial < 3; trial++ {
				shape := randShape(r)
				var xs []*Array
				var cs []caseArray
				for range o.Arity {
					x, c := randTypedArray(r, dt, shape)
					xs, cs = append(xs, x), append(cs, c)
				}
				res := tableCall(o, xs...)
				if err := res.Err(); err != nil {
					if !strings.Contains(err.Error(), dt.String()) {
						t.Errorf("%s of %v: unclear error %v", o.Name, dt, err)
					}
					break
				}
				c := &dtypeCase{Op: o.NumPy, Args: cs, result: res, exact: o.Exact && !(o.ComplexUlp && dt.IsComplex())}
				if in := res.n.Args[0].DType; in != dt && o.Rule != optable.Logical {
					c.Cast = in.String() // an integer cast to float first (NumPy would give float16)
				}
				cases = append(cases, c)
				built++
			}
		}
		if built == 0 {
			t.Errorf("%s: no dtype of its rule builds", o.Name)
		}
	}
	for i, c := range cases {
		got, err := c.result.Compute()
		if err != nil {
			t.Fatalf("case %d (%s): %v", i, c.Op, err)
		}
		if c.got, err = got.n.Values(); err != nil {
			t.Fatal(err)
		}
	}
	want := numpyResults(t, py, cases)
	fails := 0
	for i, c := range cases {
		w := want[i]
		desc := fmt.Sprintf("case %d: %s of %s", i, c.Op, describe(c))
		if c.got.DType().String() != w.DType {
			t.Errorf("%s: dtype %v, NumPy %s", desc, c.got.DType(), w.DType)
			fails++
		} else {
			for j, ws := range w.Data {
				if !sameValue(c.got, j, ws, c.exact) {
					t.Errorf("%s: value %d is %v, NumPy %s (input %s)", desc, j, c.got.Elem(j), ws, inputAt(c, j))
					fails++
					break
				}
			}
		}
		if fails > 30 {
			t.Fatal("too many failures")
		}
	}
}

func inputAt(c *dtypeCase, j int) string {
	var s []string
	for _, a := range c.Args {
		s = append(s, a.Data[j])
	}
	return strings.Join(s, ", ")
}

// TestLog2AndAcosNearOne: log2 and arccos stay within 2 ulp of NumPy near ±1, where Go's
// math.Log2 and math.Acos cancel (thousands to billions of ulp off), and over their domain,
// subnormals and powers of two included.
func TestLog2AndAcosNearOne(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 7))
	var xs []float64
	for i := range 4000 {
		switch i % 4 {
		case 0:
			xs = append(xs, 1-math.Ldexp(r.Float64(), -r.IntN(50)))
		case 1:
			xs = append(xs, -1+math.Ldexp(r.Float64(), -r.IntN(50)))
		case 2:
			xs = append(xs, 1+math.Ldexp(r.Float64(), -r.IntN(50)))
		default:
			xs = append(xs, math.Ldexp(r.Float64(), r.IntN(2000)-1074))
		}
	}
	xs = append(xs, 1, -1, 0, math.Copysign(0, -1), 0.5, -0.5, 2, 1024, 5e-324, math.Ldexp(1, -1030), math.Inf(1), math.NaN(), -3)
	in := input{name: "x", shape: []int{len(xs)}, data: xs}
	x := FromSlice(xs, Chunks(1000))
	cases := []npCase{{Code: "np.log2(x)", Inputs: map[string]npArray{"x": in.np()}}, {Code: "np.arccos(x)", Inputs: map[string]npArray{"x": in.np()}}}
	res := numpy(t, cases)
	for i, got := range []*Array{Log2(x), Acos(x)} {
		v, err := got.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		want := res[i].values(t)
		for j := range v {
			a, b := v[j], want[j]
			if a != a && b != b || a == b {
				continue
			}
			d := int64(math.Float64bits(math.Abs(a))) - int64(math.Float64bits(math.Abs(b)))
			if math.Signbit(a) != math.Signbit(b) || d > 2 || d < -2 {
				t.Errorf("%s of %v: %v, NumPy %v", cases[i].Code, xs[j], a, b)
				break
			}
		}
	}
}

// TestHostGathersOnGPUSaid: with the GPU's late gathers, a stage reading a take of complex
// values gathers them on the host inside the GPU task, and cuda.HostGathers says so (the GPU
// compute's Path then names the host gather); a take of integers is gathered on the device,
// and a search is a binary search in the fused kernel, which gathers nothing.
func TestHostGathersOnGPUSaid(t *testing.T) {
	idx := FromSliceInt64([]int64{2, 0, 1})
	sorted := FromSlice([]float64{1, 2, 3, 5, 8})
	for _, c := range []struct {
		what string
		y    *Array
		host bool
	}{
		{"search", Searchsorted(sorted, FromSlice([]float64{4, 0, 9, 2}), "left").Add(1), false},
		{"take of complex128", Take(FromSliceComplex128([]complex128{1, 2i, 3}), idx, 0).Mul(2), true},
		{"take of int32", Take(FromSliceInt64([]int64{7, 8, 9}, WithDType(Int32)), idx, 0).Mul(2), false},
	} {
		if err := c.y.Err(); err != nil {
			t.Fatalf("%s: %v", c.what, err)
		}
		done := map[*expr.Node]dtype.Slice{}
		order := plan.Order(c.y.n)
		for id, n := range order {
			st, err := plan.Lower(id, n, done, plan.Options{LateGather: true})
			if err != nil {
				t.Fatal(err)
			}
			if id == len(order)-1 {
				if got := cuda.HostGathers(st); got != c.host {
					t.Errorf("%s: HostGathers %v, want %v", c.what, got, c.host)
				}
				break
			}
			outs := make([]*plan.Output, len(st.Tasks))
			for i, task := range st.Tasks {
				if outs[i], err = cpu.Execute(context.Background(), task); err != nil {
					t.Fatal(err)
				}
			}
			if done[n], err = st.Assemble(outs); err != nil {
				t.Fatal(err)
			}
		}
	}
}
