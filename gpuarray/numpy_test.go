package gpuarray

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/internal/testenv"
)

// The NumPy oracle: test cases name Python expressions over input arrays, the test
// virtualenv's NumPy evaluates them all in one process, and the tests compare our results
// with NumPy's bit for bit (shapes, values; str() output for printing).

// npCase is one expression for NumPy: Code is evaluated with np and the inputs bound.
type npCase struct {
	Code   string
	Inputs map[string]npArray
}

type npArray struct {
	Shape []int
	Data  []string // float.hex / strconv 'x'
	F32   bool     `json:",omitempty"`
}

// npResult is NumPy's answer: an array, a list of arrays, a string, or an error.
type npResult struct {
	Shape  []int
	Data   []string
	List   []npResult
	Str    *string
	Chunks [][]int
	Err    string
}

const npScript = `
import json, sys, numpy as np
def arr(d):
    a = np.array([float.fromhex(v) for v in d["Data"]], dtype=np.float64).reshape(d["Shape"])
    return a.astype(np.float32) if d.get("F32") else a
def enc(r):
    if isinstance(r, str):
        return {"Str": r}
    if isinstance(r, (list, tuple)):
        if all(isinstance(c, tuple) for c in r):
            return {"Chunks": [list(c) for c in r]}
        return {"List": [enc(x) for x in r]}
    r = np.asarray(r)
    return {"Shape": list(r.shape), "Data": [float(v).hex() for v in r.astype(np.float64).ravel()]}
out = []
for c in json.load(sys.stdin):
    env = {"np": np}
    for k, v in (c.get("Inputs") or {}).items():
        env[k] = arr(v)
    try:
        out.append(enc(eval(c["Code"], env)))
    except Exception as e:
        out.append({"Err": type(e).__name__ + ": " + str(e)})
json.dump(out, sys.stdout)
`

// numpy evaluates cases with the test virtualenv's NumPy (with dask importable as da in
// Code where it asks for it).
func numpy(t *testing.T, cases []npCase) []npResult {
	t.Helper()
	py := testenv.Python(t)
	out := runPython(t, py, npScript, cases)
	var res []npResult
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("numpy output: %v", err)
	}
	if len(res) != len(cases) {
		t.Fatalf("numpy answered %d of %d cases", len(res), len(cases))
	}
	return res
}

// runPython runs script with the interpreter py, its input the JSON of in, and returns what it
// printed; a failure stops the test with the script's stderr.
func runPython(t *testing.T, py, script string, in any) []byte {
	t.Helper()
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(py, "-c", script)
	cmd.Stdin = bytes.NewReader(b)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, stderr.String())
	}
	return out
}

func hexes(v []float64) []string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.FormatFloat(x, 'x', -1, 64)
	}
	return s
}

func (r npResult) values(t *testing.T) []float64 {
	t.Helper()
	v := make([]float64, len(r.Data))
	for i, s := range r.Data {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			t.Fatalf("numpy value %q: %v", s, err)
		}
		v[i] = f
	}
	return v
}

// input is a host array for a case, with random chunks.
type input struct {
	name  string
	shape []int
	data  []float64
}

func (in input) np() npArray { return npArray{Shape: in.shape, Data: hexes(in.data)} }

// npShape returns a shape of rank r with lengths in [lo, hi].
func npShape(rs *rand.Rand, r, lo, hi int) []int {
	s := make([]int, r)
	for i := range s {
		s[i] = lo + rs.IntN(hi-lo+1)
	}
	return s
}

// npChunks splits each axis into random chunk sizes.
func npChunks(rs *rand.Rand, shape []int) [][]int {
	out := make([][]int, len(shape))
	for ax, n := range shape {
		if n == 0 {
			out[ax] = []int{0}
			continue
		}
		for left := n; left > 0; {
			c := 1 + rs.IntN(left)
			if rs.IntN(3) == 0 {
				c = left
			}
			out[ax] = append(out[ax], c)
			left -= c
		}
	}
	return out
}

// randArray returns a chunked array of normal numbers (some exact small integers, so that
// values repeat) and its input for NumPy.
func randArray(rs *rand.Rand, name string, shape []int) (*Array, input) {
	n := 1
	for _, d := range shape {
		n *= d
	}
	v := make([]float64, n)
	for i := range v {
		v[i] = math.Round(rs.NormFloat64()*1000) / 64
	}
	return FromSlice(v, Shape(shape...), ChunkSizes(npChunks(rs, shape)...)), input{name, shape, v}
}

func ints(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ", ")
}

func tuple(v []int) string {
	if len(v) == 1 {
		return "(" + ints(v) + ",)"
	}
	return "(" + ints(v) + ")"
}

// check is one case: our array and NumPy's expression.
type check struct {
	what   string
	got    *Array
	list   []*Array // or several arrays (Meshgrid, Unstack, BroadcastArrays)
	code   string
	inputs []input
}

// runChecks computes every case on the CPU (opts pick another scheduler) and compares with
// NumPy: the same shape and the same values, bit for bit (NaN equal to NaN).
func runChecks(t *testing.T, cs []check, opts ...ComputeOption) {
	t.Helper()
	cases := make([]npCase, len(cs))
	for i, c := range cs {
		cases[i] = npCase{Code: c.code, Inputs: map[string]npArray{}}
		for _, in := range c.inputs {
			cases[i].Inputs[in.name] = in.np()
		}
	}
	res := numpy(t, cases)
	for i, c := range cs {
		r := res[i]
		if r.Err != "" {
			t.Errorf("%s: numpy: %s (code %s)", c.what, r.Err, c.code)
			continue
		}
		if c.list != nil {
			if len(r.List) != len(c.list) {
				t.Errorf("%s: %d arrays, numpy %d (%s)", c.what, len(c.list), len(r.List), c.code)
				continue
			}
			for j := range c.list {
				compareArray(t, fmt.Sprintf("%s [%d]", c.what, j), c.list[j], r.List[j], c.code, opts)
			}
			continue
		}
		compareArray(t, c.what, c.got, r, c.code, opts)
	}
}

func compareArray(t *testing.T, what string, got *Array, r npResult, code string, opts []ComputeOption) {
	t.Helper()
	if err := got.Err(); err != nil {
		t.Errorf("%s: %v (numpy: %s)", what, err, code)
		return
	}
	c, err := got.Compute(opts...) // a masked array's shape is known once computed
	if err != nil {
		t.Errorf("%s: %v (%s)", what, err, code)
		return
	}
	if fmt.Sprint(c.Shape()) != fmt.Sprint(r.Shape) {
		t.Errorf("%s: shape %v, numpy %v (%s)", what, c.Shape(), r.Shape, code)
		return
	}
	v, err := c.ToSlice()
	if err != nil {
		t.Errorf("%s: %v (%s)", what, err, code)
		return
	}
	want := r.values(t)
	for i := range want {
		if math.Float64bits(v[i]) != math.Float64bits(want[i]) && !(v[i] != v[i] && want[i] != want[i]) {
			t.Errorf("%s: element %d is %v, numpy %v (%s)", what, i, v[i], want[i], code)
			return
		}
	}
}
