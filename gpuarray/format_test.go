package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestStringMatchesNumPy compares the text of computed arrays with NumPy's str(): small and
// large (summarized) grids, 1 to 3 axes, positional and scientific formats, NaN and ±Inf,
// float32.
func TestStringMatchesNumPy(t *testing.T) {
	rs := rand.New(rand.NewPCG(3, 5))
	type tc struct {
		got  string
		code string
	}
	var cases []tc
	add := func(x *Array, in input, f32 bool) {
		c, err := x.Compute(Inline())
		if err != nil {
			t.Fatal(err)
		}
		code := "str(x)"
		if f32 {
			code = "str(x.astype(np.float32))"
		}
		in.name = "x"
		cases = append(cases, tc{c.String(), code})
		_ = in
	}
	var inputs []input
	scales := []float64{1, 1e-3, 1e5, 1e9, 1e-7, 0.5}
	for round := 0; round < 24; round++ {
		shape := npShape(rs, 1+rs.IntN(3), 0, 8)
		if round%6 == 5 {
			shape = []int{40, 30}
		}
		if round%6 == 4 {
			shape = []int{1200}
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float64, n)
		sc := scales[round%len(scales)]
		for i := range v {
			switch rs.IntN(12) {
			case 0:
				v[i] = math.Round(rs.NormFloat64() * 10)
			case 1:
				if round%4 == 0 {
					v[i] = []float64{math.NaN(), math.Inf(1), math.Inf(-1)}[rs.IntN(3)]
				}
			default:
				v[i] = rs.NormFloat64() * sc
			}
		}
		f32 := round%5 == 3
		opts := []ArrayOption{Shape(shape...)}
		if f32 {
			opts = append(opts, WithDType(Float32))
		}
		in := input{"x", shape, v}
		add(FromSlice(v, opts...), in, f32)
		inputs = append(inputs, in)
	}
	ncs := make([]npCase, len(cases))
	for i, c := range cases {
		ncs[i] = npCase{Code: c.code, Inputs: map[string]npArray{"x": inputs[i].np()}}
	}
	res := numpy(t, ncs)
	for i, c := range cases {
		if res[i].Err != "" || res[i].Str == nil {
			t.Fatalf("numpy: %s", res[i].Err)
		}
		if c.got != *res[i].Str {
			t.Errorf("case %d, shape %v:\nours:\n%s\nnumpy:\n%s", i, inputs[i].shape, c.got, *res[i].Str)
		}
	}
}

func TestStringOfLazyAndHTML(t *testing.T) {
	x := Arange(0, 12, 1).Reshape(3, 4)
	if s := x.String(); !strings.Contains(s, "lazy") || !strings.Contains(s, "(3, 4)") {
		t.Errorf("lazy: %s", s)
	}
	c, err := x.Compute()
	if err != nil {
		t.Fatal(err)
	}
	want := "[[ 0.  1.  2.  3.]\n [ 4.  5.  6.  7.]\n [ 8.  9. 10. 11.]]"
	if s := fmt.Sprint(c); s != want {
		t.Errorf("computed:\n%s\nwant\n%s", s, want)
	}
	h := c.HTML()
	for _, s := range []string{"<svg", "float64", "<pre", "[ 8.  9. 10. 11.]]"} {
		if !strings.Contains(h, s) {
			t.Errorf("HTML lacks %q", s)
		}
	}
}
