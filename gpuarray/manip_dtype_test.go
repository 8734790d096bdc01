package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestManipDTypesMatchNumPy runs manipulation, joins, takes and masks on int64, bool and
// float32 arrays: values as NumPy's, and the dtype kept (manipulation never changes it).
func TestManipDTypesMatchNumPy(t *testing.T) {
	rs := rand.New(rand.NewPCG(5, 9))
	var cs []check
	for round := 0; round < 12; round++ {
		shape := npShape(rs, 1+rs.IntN(3), 1, 5)
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float64, n)
		iv := make([]int64, n)
		bv := make([]bool, n)
		fv := make([]float32, n)
		for i := range v {
			iv[i] = int64(rs.IntN(200) - 100)
			v[i] = float64(iv[i])
			bv[i] = iv[i] > 0
			fv[i] = float32(v[i]) / 8
		}
		in := input{"x", shape, v}
		chunks := ChunkSizes(npChunks(rs, shape)...)
		ax := rs.IntN(len(shape))
		for _, c := range []struct {
			x    *Array
			cast string
			dt   DType
		}{
			{FromSliceInt64(iv, Shape(shape...), chunks), "x.astype(np.int64)", Int64},
			{FromSliceBool(bv, Shape(shape...), chunks), "(x > 0)", Bool},
			{FromSliceFloat32(fv, Shape(shape...), chunks), "(x.astype(np.float32) / np.float32(8))", Float32},
		} {
			x, e := c.x, c.cast
			k := rs.IntN(4)
			idx := make([]float64, k)
			for j := range idx {
				idx[j] = float64(rs.IntN(shape[ax]))
			}
			ii := input{"i", []int{k}, idx}
			for _, cc := range []check{
				{what: "Reshape", got: x.Reshape(-1), code: e + ".reshape(-1)"},
				{what: "Concat", got: ConcatAxis(ax, x, x), code: fmt.Sprintf("np.concat([%s, %s], axis=%d)", e, e, ax)},
				{what: "Flip", got: Flip(x, ax), code: fmt.Sprintf("np.flip(%s, axis=%d)", e, ax)},
				{what: "Roll", got: Roll(x, 2, ax), code: fmt.Sprintf("np.roll(%s, 2, axis=%d)", e, ax)},
				{what: "Tile", got: Tile(x, 2), code: fmt.Sprintf("np.tile(%s, 2)", e)},
				{what: "Take", got: x.Take(FromSlice(idx), ax), code: fmt.Sprintf("np.take(%s, i.astype(np.int64), axis=%d)", e, ax), inputs: []input{in, ii}},
				{what: "Mask", got: x.Mask(FromSliceBool(bv, Shape(shape...))), code: fmt.Sprintf("%s[x > 0]", e)},
			} {
				cc.what = fmt.Sprintf("%s of %v %v", cc.what, c.dt, shape)
				if cc.inputs == nil {
					cc.inputs = []input{in}
				}
				if cc.got.Err() == nil && cc.got.DType() != c.dt {
					t.Errorf("%s: dtype %v, want %v", cc.what, cc.got.DType(), c.dt)
				}
				cs = append(cs, cc)
			}
		}
	}
	runChecks(t, cs, Inline())
}

// TestStringOfIntsAndBools compares the text of computed int64 and bool arrays with NumPy's.
func TestStringOfIntsAndBools(t *testing.T) {
	rs := rand.New(rand.NewPCG(6, 2))
	var got []string
	var ncs []npCase
	for round := 0; round < 8; round++ {
		shape := npShape(rs, 1+rs.IntN(2), 1, 6)
		if round == 7 {
			shape = []int{30, 50}
		}
		n := 1
		for _, d := range shape {
			n *= d
		}
		v := make([]float64, n)
		iv := make([]int64, n)
		bv := make([]bool, n)
		for i := range v {
			iv[i] = int64(math.Round(rs.NormFloat64() * math.Pow(10, float64(rs.IntN(6)))))
			v[i] = float64(iv[i])
			bv[i] = iv[i] > 0
		}
		for _, c := range []struct {
			x    *Array
			code string
		}{{FromSliceInt64(iv, Shape(shape...)), "str(x.astype(np.int64))"}, {FromSliceBool(bv, Shape(shape...)), "str(x > 0)"}} {
			cx, err := c.x.Compute()
			if err != nil {
				t.Fatal(err)
			}
			got = append(got, cx.String())
			ncs = append(ncs, npCase{Code: c.code, Inputs: map[string]npArray{"x": input{"x", shape, v}.np()}})
		}
	}
	res := numpy(t, ncs)
	for i := range got {
		if res[i].Str == nil || got[i] != *res[i].Str {
			t.Errorf("case %d (%s):\nours:\n%s\nnumpy:\n%v", i, ncs[i].Code, got[i], res[i].Str)
		}
	}
}
