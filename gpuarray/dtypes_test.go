package gpuarray

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/optable"
	"github.com/gpunotes/gpunotes/internal/testenv"
)

// dtypeCase is one operation checked against NumPy: operands (values and dtype), the op, and
// what we computed.
type dtypeCase struct {
	Op     string      `json:"op"`
	Args   []caseArray `json:"args"`
	Scalar *caseScalar `json:"scalar,omitempty"` // a Go number as the second operand
	Axis   *int        `json:"axis,omitempty"`
	To     string      `json:"to,omitempty"`   // astype's target
	Cast   string      `json:"cast,omitempty"` // NumPy casts the operands to it first
	got    dtype.Slice // our values
	shape  []int       // our shape
	exact  bool        // bit equality expected
	result *Array      // our result, lazy
}

type caseArray struct {
	DType string   `json:"dtype"`
	Shape []int    `json:"shape"`
	Data  []string `json:"data"` // int64 values, or float64 values, or "re,im" pairs
}

type caseScalar struct {
	Kind  string `json:"kind"` // int, float, bool
	Value string `json:"value"`
}

// numpyEval computes the cases with NumPy and returns each result's dtype and values (as
// strings: integers exactly, floats by repr, complex as "re,im").
const numpyEval = `
import json, sys, warnings, numpy as np
warnings.simplefilter("ignore")
def arr(a):
    dt = np.dtype(a["dtype"])
    if dt.kind == "c":
        v = np.array([complex(*map(float, s.split(","))) for s in a["data"]], np.complex128)
    elif dt.kind == "f":
        v = np.array([float(s) for s in a["data"]], np.float64)
    else:
        v = np.array([int(s) for s in a["data"]], np.int64)
    return v.astype(dt).reshape(a["shape"])
def fmt(x, dt):
    if dt.kind == "c":
        return repr(float(x.real)) + "," + repr(float(x.imag))
    if dt.kind == "f":
        return repr(float(x))
    if dt.kind == "b":
        return "1" if x else "0"
    return str(int(x))
out = []
for c in json.load(sys.stdin):
    xs = [arr(a) for a in c["args"]]
    if c.get("cast"):
        xs = [x.astype(c["cast"]) for x in xs]
    if c.get("scalar"):
        s = c["scalar"]
        xs.append({"int": int, "float": float, "bool": lambda v: v == "1"}[s["kind"]](s["value"]))
    op, ax = c["op"], c.get("axis")
    if op == "astype":
        r = xs[0].astype(c["to"])
    elif op == "where":
        r = np.where(*xs)
    elif op in ("sum", "mean", "min", "max", "argmin", "argmax", "var", "std"):
        r = getattr(np, op)(xs[0], axis=ax)
    else:
        r = getattr(np, op)(*xs)
    r = np.asarray(r)
    out.append({"dtype": str(r.dtype), "shape": list(r.shape), "data": [fmt(x, r.dtype) for x in r.ravel()]})
print(json.dumps(out))
`

type numpyResult struct {
	DType string   `json:"dtype"`
	Shape []int    `json:"shape"`
	Data  []string `json:"data"`
}

var testDTypes = []DType{Bool, Int8, Int16, Int32, Int64, Uint8, Uint16, Uint32, Uint64, Float32, Float64, Complex128}

// randArray makes a random array of dt and its description for NumPy: integers over the
// whole range of the type (so arithmetic wraps), floats with NaN, ±Inf, -0 and subnormals.
func randTypedArray(r *rand.Rand, dt DType, shape []int) (*Array, caseArray) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	ca := caseArray{DType: dt.String(), Shape: shape}
	opts := []ArrayOption{Shape(shape...), randChunks(r, shape), WithDType(dt)}
	switch {
	case dt.IsFloat():
		v := make([]float64, n)
		specials := []float64{math.NaN(), math.Inf(1), math.Inf(-1), math.Copysign(0, -1), 0, 5e-324, 1e-310, 1, -1, 0.5}
		for i := range v {
			if r.IntN(5) == 0 {
				v[i] = specials[r.IntN(len(specials))]
			} else {
				v[i] = math.Round(r.NormFloat64()*1000) / 8
			}
			ca.Data = append(ca.Data, strconv.FormatFloat(v[i], 'g', -1, 64))
		}
		return FromSlice(v, opts...), ca
	case dt.IsComplex():
		v := make([]complex128, n)
		for i := range v {
			v[i] = complex(math.Round(r.NormFloat64()*100)/4, math.Round(r.NormFloat64()*100)/4)
			ca.Data = append(ca.Data, strconv.FormatFloat(real(v[i]), 'g', -1, 64)+","+strconv.FormatFloat(imag(v[i]), 'g', -1, 64))
		}
		return FromSliceComplex128(v, opts...), ca
	}
	v := make([]int64, n)
	bits := 8 * dt.Size()
	for i := range v {
		switch {
		case dt == Bool:
			v[i] = int64(r.IntN(2))
		case r.IntN(4) == 0:
			v[i] = int64(r.IntN(7)) - 3
		case bits == 64:
			v[i] = int64(r.Uint64())
		default:
			v[i] = int64(r.Uint64() >> (64 - bits)) // wraps into the type on conversion
		}
		ca.Data = append(ca.Data, strconv.FormatInt(v[i], 10))
	}
	return FromSliceInt64(v, opts...), ca
}

func TestDTypesAgainstNumPy(t *testing.T) {
	py := testenv.Python(t)
	r := rand.New(rand.NewPCG(15, 1))
	// The two-operand first ops of the table (optable.Core), by their NumPy names, through
	// their generated methods; not pow, which NumPy refuses for the negative integer
	// exponents this test's integers have.
	binOps := map[string]func(a *Array, b any) *Array{}
	for _, o := range optable.Core {
		if o.Arity != 2 || o.Go == "Pow" {
			continue
		}
		binOps[o.NumPy] = func(a *Array, b any) *Array {
			m := reflect.ValueOf(a).MethodByName(o.Go)
			if !m.IsValid() {
				t.Fatalf("%s: no method %s (run go generate ./gpuarray/optable)", o.Name, o.Go)
			}
			return m.Call([]reflect.Value{reflect.ValueOf(&b).Elem()})[0].Interface().(*Array)
		}
	}
	if len(binOps) != 12 {
		t.Fatalf("%d two-operand first ops, want 12", len(binOps))
	}
	var names []string
	for k := range binOps {
		names = append(names, k)
	}
	sortStrings(names)
	reds := map[string]func(a *Array, axes ...int) *Array{
		"sum": (*Array).Sum, "mean": (*Array).Mean, "min": (*Array).Min, "max": (*Array).Max,
		"argmin": (*Array).ArgMin, "argmax": (*Array).ArgMax, "var": (*Array).Var,
	}
	var redNames []string
	for k := range reds {
		redNames = append(redNames, k)
	}
	sortStrings(redNames)
	var cases []*dtypeCase
	add := func(c *dtypeCase) { cases = append(cases, c) }
	for trial := 0; trial < 400; trial++ {
		shape := randShape(r)
		da := testDTypes[r.IntN(len(testDTypes))]
		a, ca := randTypedArray(r, da, shape)
		switch k := r.IntN(6); {
		case k <= 1: // binary, two arrays of random dtypes
			op := names[r.IntN(len(names))]
			db := testDTypes[r.IntN(len(testDTypes))]
			if da.IsComplex() || db.IsComplex() {
				op = []string{"add", "subtract", "multiply", "equal", "not_equal"}[r.IntN(5)]
			}
			if op == "subtract" && da == Bool && db == Bool {
				op = "add"
			}
			b, cb := randTypedArray(r, db, shape)
			add(&dtypeCase{Op: op, Args: []caseArray{ca, cb}, result: binOps[op](a, b), exact: true})
		case k == 2: // binary with a weak Go scalar
			op := names[r.IntN(len(names))]
			if da.IsComplex() {
				op = "add"
			}
			var s any
			var cs caseScalar
			switch r.IntN(3) {
			case 0:
				s, cs = 3, caseScalar{Kind: "int", Value: "3"}
			case 1:
				s, cs = 1.5, caseScalar{Kind: "float", Value: "1.5"}
			default:
				s, cs = true, caseScalar{Kind: "bool", Value: "1"}
			}
			if op == "subtract" && da == Bool && cs.Kind == "bool" {
				op = "add"
			}
			add(&dtypeCase{Op: op, Args: []caseArray{ca}, Scalar: &cs, result: binOps[op](a, s), exact: true})
		case k == 3: // astype
			to := testDTypes[r.IntN(len(testDTypes))]
			add(&dtypeCase{Op: "astype", To: to.String(), Args: []caseArray{ca}, result: a.AsType(to), exact: true})
		case k == 4: // where, with a comparison as the condition
			db := testDTypes[r.IntN(len(testDTypes))]
			b, cb := randTypedArray(r, db, shape)
			c, cc := randTypedArray(r, Bool, shape)
			add(&dtypeCase{Op: "where", Args: []caseArray{cc, ca, cb}, result: Where(c, a, b), exact: true})
		default: // a reduction over all axes or one
			op := redNames[r.IntN(len(redNames))]
			if da.IsComplex() {
				op = []string{"sum", "mean"}[r.IntN(2)] // the reductions complex values have
			}
			c := &dtypeCase{Op: op, Args: []caseArray{ca}}
			if r.IntN(2) == 0 {
				ax := r.IntN(len(shape))
				c.Axis = &ax
				c.result = reds[op](a, ax)
			} else {
				c.result = reds[op](a)
			}
			c.exact = op != "mean" && op != "var" && !(op == "sum" && (da.IsFloat() || da.IsComplex()))
			add(c)
		}
	}
	for i, c := range cases {
		if err := c.result.Err(); err != nil {
			t.Fatalf("case %d (%s of %v): %v", i, c.Op, c.Args, err)
		}
		res, err := c.result.Compute()
		if err != nil {
			t.Fatalf("case %d (%s): %v", i, c.Op, err)
		}
		c.got, err = res.n.Values()
		if err != nil {
			t.Fatal(err)
		}
		c.shape = res.Shape()
	}
	want := numpyResults(t, py, cases)
	fails := 0
	for i, c := range cases {
		w := want[i]
		desc := fmt.Sprintf("case %d: %s of %s", i, c.Op, describe(c))
		if c.got.DType().String() != w.DType {
			t.Errorf("%s: dtype %v, NumPy %s", desc, c.got.DType(), w.DType)
			fails++
			continue
		}
		if c.got.Len() != len(w.Data) {
			t.Errorf("%s: %d values, NumPy %d (shape %v vs %v)", desc, c.got.Len(), len(w.Data), c.shape, w.Shape)
			fails++
			continue
		}
		for j, ws := range w.Data {
			if !sameValue(c.got, j, ws, c.exact) {
				t.Errorf("%s: value %d is %v, NumPy %s", desc, j, c.got.Elem(j), ws)
				fails++
				break
			}
		}
		if fails > 20 {
			t.Fatal("too many failures")
		}
	}
}

func describe(c *dtypeCase) string {
	var parts []string
	for _, a := range c.Args {
		parts = append(parts, fmt.Sprintf("%s%v", a.DType, a.Shape))
	}
	if c.Scalar != nil {
		parts = append(parts, c.Scalar.Kind+" "+c.Scalar.Value)
	}
	if c.To != "" {
		parts = append(parts, "to "+c.To)
	}
	if c.Axis != nil {
		parts = append(parts, fmt.Sprint("axis ", *c.Axis))
	}
	return strings.Join(parts, ", ")
}

// sameValue compares value j of got with NumPy's string form: exactly (NaN equals NaN, and
// the sign of zero counts), or within 1e-12 relative (1e-5 for float32) when not exact.
func sameValue(got dtype.Slice, j int, w string, exact bool) bool {
	dt := got.DType()
	switch {
	case dt.IsComplex():
		c := dtype.Convert(got.Slice(j, j+1), dtype.Complex128).Complex128s()[0]
		p := strings.SplitN(w, ",", 2)
		re, _ := strconv.ParseFloat(p[0], 64)
		im, _ := strconv.ParseFloat(p[1], 64)
		return closeFloat(real(c), re, exact, dt == Complex64) && closeFloat(imag(c), im, exact, dt == Complex64)
	case dt.IsFloat():
		f, err := strconv.ParseFloat(w, 64)
		return err == nil && closeFloat(got.Float(j), f, exact, dt == Float32)
	case dt == Bool:
		return (w == "1") == got.Bools()[j]
	case dt == Uint64:
		u, err := strconv.ParseUint(w, 10, 64)
		return err == nil && u == got.Uint64s()[j]
	}
	i, err := strconv.ParseInt(w, 10, 64)
	return err == nil && float64(i) == got.Float(j) && fmt.Sprint(got.Elem(j)) == w
}

func closeFloat(g, w float64, exact, f32 bool) bool {
	if g != g || w != w {
		return g != g && w != w
	}
	if exact || math.IsInf(w, 0) || w == 0 {
		return g == w && math.Signbit(g) == math.Signbit(w) || !exact && g == w
	}
	tol := 1e-12
	if f32 {
		tol = 1e-5
	}
	return math.Abs(g-w) <= tol*math.Max(math.Abs(w), 1e-300)
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// numpyResults computes the cases with NumPy (numpyEval, run by the interpreter py) and returns
// one result per case, in order.
func numpyResults(t *testing.T, py string, cases []*dtypeCase) []numpyResult {
	t.Helper()
	out := runPython(t, py, numpyEval, cases)
	var want []numpyResult
	if err := json.Unmarshal(out, &want); err != nil {
		t.Fatal(err)
	}
	if len(want) != len(cases) {
		t.Fatalf("numpy gave %d results for %d cases", len(want), len(cases))
	}
	return want
}
