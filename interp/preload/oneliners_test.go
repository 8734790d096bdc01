package preload_test

import (
	"context"
	"fmt"
	"math"
	"math/cmplx"
	"os/exec"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/internal/testenv"
	"github.com/gpunotes/gpunotes/interp"
	"github.com/gpunotes/gpunotes/interp/preload"
)

// oneLiner is an everyday NumPy (CuPy, dask.array) spelling and the same line as a NumPy user
// writes it in a cell under gpuarray's naming rule (NumPy's name, Go's case and initialisms).
// For dask.array's spellings (rechunk) the numpy column is the NumPy line with the same result.
type oneLiner struct{ numpy, cell string }

// oneLiners come from NumPy's ndarray method list and the first pages of NumPy's, CuPy's and
// dask.array's tutorials. Each cell ends with show(...) of its results.
var oneLiners = []oneLiner{
	// ndarray methods, with NumPy's defaults
	{"x.cumsum()", "show(x.Cumsum())"},
	{"x.cumsum(axis=1)", "show(x.Cumsum(1))"},
	{"v.cumprod()", "show(v.Cumprod())"},
	{"x.flatten()", "show(x.Flatten())"},
	{"v.argsort()", "show(v.Argsort())"},
	{"x.nonzero()", "show(x.Nonzero())"},
	{"x.swapaxes(0, 1)", "show(x.Swapaxes(0, 1))"},
	{"v.take([0, 2])", "show(v.Take(gpuarray.FromSlice([]int{0, 2})))"},
	{"x.take([0, 2], axis=1)", "show(x.Take(gpuarray.FromSlice([]int{0, 2}), 1))"},
	{"(v / 3).round()", "show(v.Div(3).Round())"},
	{"s.searchsorted([2.5, 3])", "show(s.Searchsorted(gpuarray.FromSlice([]float64{2.5, 3})))"},
	{"x.sum()", "show(x.Sum())"},
	{"x.sum(axis=0)", "show(x.Sum(0))"},
	{"x.mean()", "show(x.Mean())"},
	{"x.mean(axis=0)", "show(x.Mean(0))"},
	{"x.std()", "show(x.Std())"},
	{"x.var(axis=1)", "show(x.Var(1))"},
	{"x.max()", "show(x.Max())"},
	{"x.min(axis=1)", "show(x.Min(1))"},
	{"x.argmax()", "show(x.ArgMax())"},
	{"x.argmin(axis=0)", "show(x.ArgMin(0))"},
	{"x.prod(axis=1)", "show(x.Prod(1))"},
	{"x.all()", "show(x.All())"},
	{"x.any()", "show(x.Any())"},
	{"x.clip(2, 8)", "show(x.Clip(2, 8))"},
	{"x.reshape(4, 3)", "show(x.Reshape(4, 3))"},
	{"x.reshape(-1)", "show(x.Reshape(-1))"},
	{"x.ravel()", "show(x.Ravel())"},
	{"x.T", "show(x.T())"},
	{"x.transpose()", "show(x.Transpose())"},
	{"x.astype(np.float32)", "show(x.AsType(gpuarray.Float32))"},
	{"x.copy()", "show(x.Copy())"},
	{"x.diagonal()", "show(x.Diagonal())"},
	{"x.trace()", "show(x.Trace())"},
	{"x.dot(x.T)", "show(x.Dot(x.T()))"},
	{"v.repeat(2)", "show(v.Repeat(2))"},
	{"x.reshape(1, 3, 4).squeeze()", "show(x.Reshape(1, 3, 4).Squeeze())"},
	{"np.sort(v)", "show(v.Sort())"},
	{"x.sum().item()", "f, _ := x.Sum().Item(); show(f)"},
	{"x.tolist()", "l, _ := x.ToList(); show(l)"},
	{"x.nbytes", "show(x.NBytes())"},
	{"x.ndim", "show(x.NDim())"},
	{"x.size", "show(x.Size())"},
	{"x.shape", "show(x.Shape())"},
	{"x.conj()", "show(x.Conj())"},
	{"x.compress([True, False, True], axis=0)", "show(x.Compress(gpuarray.FromSlice([]bool{true, false, true}), 0))"},
	{"x.mT", "show(x.MT())"},
	{"k.choose([k, k * 10, k * 100, k * 1000])", "show(k.Choose(k, k.Mul(10), k.Mul(100), k.Mul(1000)))"},
	{"np.nansum(n)", "show(n.NaNSum())"},
	{"np.nanmean(n)", "show(n.NaNMean())"},
	{"np.isnan(n)", "show(gpuarray.IsNaN(n))"},
	// creation, with NumPy's defaults
	{"np.eye(3)", "show(gpuarray.Eye(3))"},
	{"np.eye(3, 4, 1)", "show(gpuarray.Eye(3, 4, 1))"},
	{"np.identity(3)", "show(gpuarray.Identity(3))"},
	{"np.arange(10)", "show(gpuarray.Arange(10))"},
	{"np.arange(2, 10, 2)", "show(gpuarray.Arange(2, 10, 2))"},
	{"np.linspace(0, 1, 5)", "show(gpuarray.Linspace(0, 1, 5))"},
	{"np.zeros((2, 3))", "show(gpuarray.Zeros(gpuarray.Shape(2, 3)))"},
	{"np.ones(3)", "show(gpuarray.Ones(gpuarray.Shape(3)))"},
	{"np.full((2, 2), 7)", "show(gpuarray.Full(7, gpuarray.Shape(2, 2)))"},
	{"np.asarray([1, 2, 3])", "show(gpuarray.Asarray([]int{1, 2, 3}))"},
	{"np.array([[1., 2], [3, 4]])", "show(gpuarray.FromSlice([][]float64{{1, 2}, {3, 4}}))"},
	{"np.array([[[1, 2], [3, 4]], [[5, 6], [7, 8]]], dtype=np.float32)", "show(gpuarray.FromSlice([][][]float32{{{1, 2}, {3, 4}}, {{5, 6}, {7, 8}}}))"},
	{"np.meshgrid(a, b)", "X, Y := gpuarray.Meshgrid2(a, b); show(X, Y)"},
	// functions
	{"np.histogram(v, 5)", "h, e := gpuarray.Histogram(v, 5); show(h, e)"},
	{"np.histogram(v, 4, range=(0, 8))", "h, e := gpuarray.Histogram(v, 4, 0, 8); show(h, e)"},
	{"np.bincount(k)", "show(gpuarray.Bincount(k))"},
	{"np.bincount(k, minlength=6)", "show(gpuarray.Bincount(k, 6))"},
	{"np.fft.fft(v)", "show(gpuarray.FFT(v))"},
	{"np.fft.rfft(v)", "show(gpuarray.RFFT(v))"},
	{"np.fft.ifft(np.fft.fft(v))", "show(gpuarray.IFFT(gpuarray.FFT(v)))"},
	{"np.fft.fftfreq(8)", "show(gpuarray.FFTFreq(8))"},
	{"np.fft.fftfreq(8, 0.1)", "show(gpuarray.FFTFreq(8, 0.1))"},
	{"np.fft.fftshift(np.arange(6))", "show(gpuarray.FFTShift(gpuarray.Arange(6)))"},
	{"np.where(v > 2, v, 0)", "show(gpuarray.Where(v.Gt(2), v, 0))"},
	{"np.concatenate([v, s])", "show(gpuarray.Concat(v, s))"},
	{"np.stack([v, s])", "show(gpuarray.Stack(v, s))"},
	{"np.unique(k)", "show(gpuarray.Unique(k))"},
	{"np.sqrt(v)", "show(gpuarray.Sqrt(v))"},
	{"np.exp(v)", "show(gpuarray.Exp(v))"},
	{"np.abs(v - 3)", "show(gpuarray.Abs(v.Sub(3)))"},
	{"np.sin(v)", "show(v.Sin())"},
	{"np.matmul(x, x.T)", "show(gpuarray.MatMul(x, x.T()))"},
	{"np.median(v)", "show(gpuarray.Median(v))"},
	{"np.percentile(v, 50)", "show(gpuarray.Percentile(v, 50))"},
	{"np.diff(v)", "show(gpuarray.Diff(v))"},
	{"np.roll(v, 2)", "show(gpuarray.Roll(v, 2))"},
	{"np.flip(v)", "show(gpuarray.Flip(v))"},
	{"np.tile(v, 2)", "show(gpuarray.Tile(v, 2))"},
	{"np.outer(v, s)", "show(gpuarray.Outer(v, s))"},
	{"np.argwhere(x > 5)", "show(gpuarray.Argwhere(x.Gt(5)))"},
	{"np.cumsum(v)", "show(gpuarray.Cumsum(v))"},
	{"np.sum(x, axis=1)", "show(gpuarray.Sum(x, 1))"},
	{"np.mean(x)", "show(gpuarray.Mean(x))"},
	{"np.einsum('ij,ij->i', x, x)", `show(gpuarray.Einsum("ij,ij->i", x, x))`},
	{"np.tril(x)", "show(gpuarray.Tril(x))"},
	// indexing and arithmetic
	{"x[1]", "show(x.Slice(gpuarray.At(1)))"},
	{"x[:, 1:3]", "show(x.Slice(gpuarray.All(), gpuarray.Span(1, 3)))"},
	{"x[x > 5]", "show(x.Mask(x.Gt(5)))"},
	{"x + 1", "show(x.Add(1))"},
	{"x * x", "show(x.Mul(x))"},
	{"x ** 2", "show(x.Pow(2))"},
	{"(x - x.mean(axis=0)) / x.std(axis=0)", "show(x.Sub(x.Mean(0)).Div(x.Std(0)))"},
	// dask.array and CuPy tutorials
	{"x.sum()", "show(x.Rechunk(2).Sum())"},
	{"np.ones((4, 4)).sum()", "show(gpuarray.Ones(gpuarray.Shape(4, 4), gpuarray.Chunks(2)).Sum())"},
	{"(x + x.T[:3, :3].sum()).mean(axis=1)", "show(x.Add(x.T().Slice(gpuarray.Span(0, 3), gpuarray.Span(0, 3)).Sum()).Mean(1))"},
	{"np.linalg.norm(v)", "show(gpuarray.VectorNorm(v, 2))"},
	{"np.linalg.norm(v)", "show(gpuarray.Norm(v))"},
}

// The inputs, in NumPy and in a cell.
const (
	oneLinerSetupPy = `import numpy as np
x = np.arange(12.).reshape(3, 4)
v = np.array([3., 1, 2, 5, 4])
s = np.array([1., 2, 3, 4, 5])
n = np.array([1., np.nan, 3])
k = np.array([0, 1, 1, 3, 2, 1])
a = np.array([1., 2, 3])
b = np.array([4., 5])
`
	oneLinerSetupGo = `import ("fmt"; "math"; "reflect"; "strings")
x := gpuarray.FromSlice([]float64{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, gpuarray.Shape(3, 4))
v := gpuarray.FromSlice([]float64{3, 1, 2, 5, 4})
s := gpuarray.FromSlice([]float64{1, 2, 3, 4, 5})
n := gpuarray.FromSlice([]float64{1, math.NaN(), 3})
k := gpuarray.FromSlice([]int64{0, 1, 1, 3, 2, 1})
a := gpuarray.FromSlice([]float64{1, 2, 3})
b := gpuarray.FromSlice([]float64{4, 5})

func showArray(x *gpuarray.Array) {
	c, err := x.Compute()
	if err != nil {
		fmt.Println("error:", err)
		return
	}
	dims := []string{}
	for _, d := range c.Shape() {
		dims = append(dims, fmt.Sprint(d))
	}
	var vals []string
	if c.DType().IsComplex() {
		z, err := c.ToSliceComplex128()
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		for _, e := range z {
			vals = append(vals, fmt.Sprint(e))
		}
	} else {
		f, err := c.AsType(gpuarray.Float64).ToSlice()
		if err != nil {
			fmt.Println("error:", err)
			return
		}
		for _, e := range f {
			vals = append(vals, fmt.Sprint(e))
		}
	}
	fmt.Printf("%s|%s\n", strings.Join(dims, ","), strings.Join(vals, ","))
}

func show(vs ...any) {
	for _, v := range vs {
		switch v := v.(type) {
		case *gpuarray.Array:
			showArray(v)
		case []*gpuarray.Array:
			for _, e := range v {
				showArray(e)
			}
		default:
			if k := reflect.ValueOf(v).Kind(); k == reflect.Slice {
				showArray(gpuarray.FromSlice(v))
			} else {
				fmt.Printf("|%v\n", v)
			}
		}
	}
}`
	oneLinerScript = `import sys
def show(v):
    if isinstance(v, (tuple, list)) and len(v) and isinstance(v[0], np.ndarray):
        return "".join(show(e) for e in v)
    a = np.asarray(v)
    if a.dtype.kind == "c":
        vals = ",".join("(%r%s%ri)" % (float(e.real), "-" if e.imag < 0 else "+", abs(float(e.imag))) for e in a.ravel())
    else:
        vals = ",".join(repr(float(e)) for e in a.ravel())
    return ",".join(str(d) for d in a.shape) + "|" + vals + "\n"
for line in sys.stdin.read().split("\n"):
    if not line:
        continue
    try:
        out = show(eval(line))
    except Exception as e:
        out = "error: %s\n" % e
    sys.stdout.write(out.replace("\n", "\\n") + "\n")
`
)

// TestNumPyOneLiners compiles each one-liner in a cell with the preloaded packages and
// compares what it shows with the venv's NumPy; it fails below 90% that compile and match.
func TestNumPyOneLiners(t *testing.T) {
	py := testenv.Python(t)
	var in strings.Builder
	for _, c := range oneLiners {
		in.WriteString(c.numpy + "\n")
	}
	cmd := exec.Command(py, "-c", oneLinerSetupPy+oneLinerScript)
	cmd.Stdin = strings.NewReader(in.String())
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("python: %v", err)
	}
	want := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(want) != len(oneLiners) {
		t.Fatalf("NumPy answered %d of %d lines", len(want), len(oneLiners))
	}

	s, err := interp.New(interp.Options{Symbols: preload.Symbols, Preload: preload.Packages})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Execute(context.Background(), oneLinerSetupGo, &textOut{}); err != nil {
		t.Fatalf("setup cell: %v", err)
	}
	compiled, matched := 0, 0
	for i, c := range oneLiners {
		w := strings.ReplaceAll(want[i], `\n`, "\n")
		if strings.HasPrefix(w, "error:") {
			t.Errorf("NumPy fails %s: %s", c.numpy, w)
			continue
		}
		o := &textOut{}
		_, err := s.Execute(context.Background(), "{\n"+c.cell+"\n}", o)
		if err != nil {
			t.Logf("does not compile: %s  (NumPy %s): %v", c.cell, c.numpy, err)
			continue
		}
		compiled++
		if why := sameShown(o.String(), w); why != "" {
			t.Logf("differs: %s  (NumPy %s): %s\ncell: %snumpy: %s", c.cell, c.numpy, why, o.String(), w)
			continue
		}
		matched++
	}
	frac := float64(matched) / float64(len(oneLiners))
	t.Logf("%d of %d one-liners compile, %d of %d (%.1f%%) also give NumPy's result", compiled, len(oneLiners), matched, len(oneLiners), 100*frac)
	if frac < 0.9 {
		t.Errorf("%.1f%% of the one-liners compile and match NumPy, want at least 90%%", 100*frac)
	}
}

// sameShown compares two show outputs (lines "shape|values"): the same shapes, and values
// equal within 1e-9 relative (NaN equal to NaN). It returns why they differ, or "".
func sameShown(got, want string) string {
	g := strings.Split(strings.TrimSpace(got), "\n")
	w := strings.Split(strings.TrimSpace(want), "\n")
	if len(g) != len(w) {
		return fmt.Sprintf("%d results, NumPy %d", len(g), len(w))
	}
	for i := range g {
		gs, gv, _ := strings.Cut(g[i], "|")
		ws, wv, _ := strings.Cut(w[i], "|")
		if gs != ws {
			return fmt.Sprintf("result %d has shape (%s), NumPy (%s)", i, gs, ws)
		}
		ga, wa := strings.Split(gv, ","), strings.Split(wv, ",")
		if gv == "" || wv == "" {
			if gv != wv {
				return fmt.Sprintf("result %d: %q, NumPy %q", i, gv, wv)
			}
			continue
		}
		if len(ga) != len(wa) {
			return fmt.Sprintf("result %d has %d values, NumPy %d", i, len(ga), len(wa))
		}
		for j := range ga {
			if !closeValue(ga[j], wa[j]) {
				return fmt.Sprintf("result %d value %d: %s, NumPy %s", i, j, ga[j], wa[j])
			}
		}
	}
	return ""
}

func closeValue(g, w string) bool {
	if strings.HasPrefix(w, "(") {
		gz, err1 := strconv.ParseComplex(g, 128)
		wz, err2 := strconv.ParseComplex(w, 128)
		return err1 == nil && err2 == nil && cmplx.Abs(gz-wz) <= 1e-9*math.Max(1, cmplx.Abs(wz))
	}
	if g == "true" {
		g = "1"
	} else if g == "false" {
		g = "0"
	}
	gf, err1 := strconv.ParseFloat(g, 64)
	wf, err2 := strconv.ParseFloat(w, 64)
	if err1 != nil || err2 != nil {
		return false
	}
	if math.IsNaN(wf) || math.IsNaN(gf) {
		return math.IsNaN(wf) && math.IsNaN(gf)
	}
	return math.Abs(gf-wf) <= 1e-9*math.Max(1, math.Abs(wf))
}

// TestRenamedNamesResolve: every new name of Renamed is in the preloaded symbol table (as a
// function or a method of Array), and every old one still compiles there, for one release.
func TestRenamedNamesResolve(t *testing.T) {
	syms := preload.Symbols["github.com/gpunotes/gpunotes/gpuarray/gpuarray"]
	if len(preload.Renamed) < 20 {
		t.Fatalf("Renamed has %d names", len(preload.Renamed))
	}
	arr := reflect.TypeOf(syms["Array"].Interface()).Elem()
	ptr := reflect.PointerTo(arr)
	for old, name := range preload.Renamed {
		for _, n := range []string{old, name} {
			short := strings.TrimPrefix(n, "gpuarray.")
			if _, ok := syms[short]; ok {
				continue
			}
			if _, ok := ptr.MethodByName(short); ok {
				continue
			}
			t.Errorf("%s (renamed %s -> %s) is neither a gpuarray symbol nor an Array method", n, old, name)
		}
	}
}
