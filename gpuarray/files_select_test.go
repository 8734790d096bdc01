package gpuarray

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// selectFiles writes one (60, 37) array as a C-order .npy, a Fortran-order .npy, a raw file and
// a Zarr store (chunks 10 x 8, zstd), then prints NumPy's value of each expression (argv[2], a
// JSON list over the array x) as float.hex strings.
const selectFiles = `
import sys, json, numpy as np, zarr
d = sys.argv[1]
x = np.random.default_rng(16).standard_normal((60, 37)) * 100
np.save(f'{d}/c.npy', x)
np.save(f'{d}/f.npy', np.asfortranarray(x))
x.astype('<f8').tofile(f'{d}/x.raw')
z = zarr.create_array(store=f'{d}/x.zarr', shape=x.shape, chunks=(10, 8), dtype='<f8', zarr_format=3)
z[:] = x
print(json.dumps([[float(v).hex() for v in np.asarray(eval(e)).astype(np.float64).ravel()] for e in json.loads(sys.argv[2])]))
`

// TestFileSelections checks strided slices, takes and reshapes of file-backed arrays (every
// format) bit for bit against NumPy, and that their tasks read only what they need: the
// boxes of a strided slice and of a take hold the selected rows, and a reshape of a C-order
// file reads the file in place (no stage reads it whole first).
func TestFileSelections(t *testing.T) {
	dir := t.TempDir()
	idx := FromSliceInt64([]int64{3, 0, 59, 3, 58, 1, -1, 30})
	cases := []struct {
		py string
		f  func(x *Array) *Array
	}{
		{"x[::7, ::3]", func(x *Array) *Array { return x.Slice(Every(7), Every(3)) }},
		{"x[50:3:-4, ::-2]", func(x *Array) *Array { return x.Slice(SpanStep(50, 3, -4), Every(-2)) }},
		{"x[5, 1::5]", func(x *Array) *Array { return x.Slice(At(5), SpanStep(1, 37, 5)) }},
		{"x[[3, 0, 59, 3, 58, 1, -1, 30]]", func(x *Array) *Array { return x.Take(idx, 0) }},
		{"x[::2][:, [3, 0, 36, 3, 35, 1]][::3]", func(x *Array) *Array {
			return x.Slice(Every(2)).Take(FromSliceInt64([]int64{3, 0, 36, 3, 35, 1}), 1).Slice(Every(3))
		}},
		{"x[[3, 0, 59, 3, 58, 1, -1, 30]][1::2, 30:2:-9]", func(x *Array) *Array { return x.Take(idx, 0).Slice(SpanStep(1, 8, 2), SpanStep(30, 2, -9)) }},
		{"x.reshape(37, 60)[::4, 7:]", func(x *Array) *Array { return x.Reshape(37, 60).Slice(Every(4), From(7)) }},
		{"x.reshape(12, 5, 37)[2:9:3].T", func(x *Array) *Array { return x.Reshape(12, 5, 37).Slice(SpanStep(2, 9, 3)).T() }},
	}
	exprs := make([]string, len(cases))
	for i, c := range cases {
		exprs[i] = c.py
	}
	js, _ := json.Marshal(exprs)
	var want [][]string
	if err := json.Unmarshal([]byte(runPy(t, selectFiles, dir, string(js))), &want); err != nil {
		t.Fatal(err)
	}
	sources := map[string]*Array{
		"npy C":       LoadNpy(filepath.Join(dir, "c.npy"), Chunks(16, 16)),
		"npy Fortran": LoadNpy(filepath.Join(dir, "f.npy"), Chunks(16, 16)),
		"raw":         FromFile(filepath.Join(dir, "x.raw"), "<f8", []int{60, 37}, 0, Chunks(25, 10)),
		"zarr":        OpenZarr(filepath.Join(dir, "x.zarr")),
	}
	for name, x := range sources {
		if err := x.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for i, c := range cases {
			got, err := c.f(x).ToSlice(Threads(2))
			if err != nil {
				t.Fatalf("%s, %s: %v", name, c.py, err)
			}
			w := make([]float64, len(want[i]))
			for j, h := range want[i] {
				if w[j], err = strconv.ParseFloat(h, 64); err != nil {
					t.Fatal(err)
				}
			}
			sameBits(t, name+", "+c.py, got, w)
		}
	}

	x := sources["npy C"]
	read := func(y *Array) (elems int64, wholeFile bool) {
		t.Helper()
		order := stageOrder([]*expr.Node{y.n})
		for _, n := range order {
			wholeFile = wholeFile || n.Kind == expr.KFile
		}
		st, err := plan.Lower(0, order[len(order)-1], nil, plan.Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, tk := range st.Tasks {
			for _, b := range tk.Inputs {
				if b.File != nil {
					elems += expr.Size(b.Shape)
				}
			}
		}
		return elems, wholeFile
	}
	for _, c := range []struct {
		what string
		y    *Array
		want int64
	}{
		{"x[::10].sum()", x.Slice(Every(10)).Sum(), 6 * 37},
		{"x[5:50:20, ::9].sum()", x.Slice(SpanStep(5, 50, 20), Every(9)).Sum(), 3 * 5},
		{"take 8 rows, sum", x.Take(idx, 0).Sum(), 8 * 37},
		{"x.reshape(37, 60)[:3].sum()", x.Reshape(37, 60).Slice(Span(0, 3)).Sum(), 3 * 60},
	} {
		got, whole := read(c.y)
		if whole || got != c.want {
			t.Errorf("%s: tasks read %d elements of the file (a stage reads it whole first: %v), want %d", c.what, got, whole, c.want)
		}
	}
}
