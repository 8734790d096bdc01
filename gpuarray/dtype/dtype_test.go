package dtype_test

import (
	"encoding/json"
	"math"
	"os/exec"
	"strconv"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/internal/testenv"
)

// numpyFacts asks NumPy for its promotion table, the weak-scalar results, the type strings
// and the results of casting special values to every dtype.
const numpyFacts = `
import json, warnings, numpy as np
warnings.simplefilter("ignore")
names = ["bool","int8","int16","int32","int64","uint8","uint16","uint32","uint64","float32","float64","complex64","complex128"]
promote = {a+","+b: str(np.result_type(np.dtype(a), np.dtype(b))) for a in names for b in names}
weak = {}
for a in names:
    x = np.zeros(2, a)
    for k, v in (("bool", True), ("int", 1), ("float", 1.5), ("complex", 1j)):
        weak[a+","+k] = str((x + v).dtype)
typestr = {a: np.dtype(a).str for a in names}
specials = [0.0, -0.0, 1.5, -1.5, 2.5, -2.7, 127.9, 128.0, 255.0, 256.0, 300.7, -129.0, 32768.0, 65535.5,
            2147483647.0, 2147483648.0, -2147483649.0, 4294967296.0, 9.3e18, 1.8e19, 2e19, -9.3e18, 1e300,
            float("inf"), float("-inf"), float("nan"), 5e-324]
def enc(v):
    v = float(v)
    return v if np.isfinite(v) else str(v)
casts = {}
for a in names:
    # Each value at the middle of a run of 32: NumPy's vectorized loop, not its scalar tail,
    # casts it (the two differ for out-of-range values).
    y = np.repeat(np.array(specials, np.float64), 32).astype(a)[16::32]
    if a.startswith("complex"):
        casts[a] = [[enc(v.real), enc(v.imag)] for v in y]
    elif a == "bool":
        casts[a] = [bool(v) for v in y]
    elif a.startswith("float"):
        casts[a] = [enc(v) for v in y]
    else:
        casts[a] = [str(int(v)) for v in y]
ints = [0, 1, -1, 127, 128, 255, 256, -129, 65535, 65536, 2**31, -2**31-1, 2**53+1, 2**62, -2**63, 2**63-1]
icasts = {}
for a in names:
    y = np.array(ints, np.int64).astype(a)
    if a.startswith("complex"):
        icasts[a] = [[enc(v.real), enc(v.imag)] for v in y]
    elif a == "bool":
        icasts[a] = [bool(v) for v in y]
    elif a.startswith("float"):
        icasts[a] = [enc(v) for v in y]
    else:
        icasts[a] = [str(int(v)) for v in y]
print(json.dumps(dict(promote=promote, weak=weak, typestr=typestr, specials=[repr(v) for v in specials], casts=casts, ints=ints, icasts=icasts)))
`

type facts struct {
	Promote  map[string]string
	Weak     map[string]string
	TypeStr  map[string]string
	Specials []string
	Casts    map[string][]any
	Ints     []int64
	ICasts   map[string][]any
}

func numpy(t *testing.T) facts {
	t.Helper()
	out, err := exec.Command(testenv.Python(t), "-c", numpyFacts).Output()
	if err != nil {
		t.Fatalf("numpy: %v", err)
	}
	var f facts
	if err := json.Unmarshal(out, &f); err != nil {
		t.Fatalf("numpy output: %v", err)
	}
	return f
}

func TestPromoteMatchesNumPy(t *testing.T) {
	f := numpy(t)
	for _, a := range dtype.All {
		for _, b := range dtype.All {
			want := f.Promote[a.String()+","+b.String()]
			if got := dtype.Promote(a, b); got.String() != want {
				t.Errorf("Promote(%v, %v) = %v, NumPy says %s", a, b, got, want)
			}
		}
		for _, k := range []struct {
			name string
			kind dtype.Kind
		}{{"bool", dtype.KindBool}, {"int", dtype.KindInt}, {"float", dtype.KindFloat}, {"complex", dtype.KindComplex}} {
			want := f.Weak[a.String()+","+k.name]
			if got := dtype.PromoteWeak(a, k.kind); got.String() != want {
				t.Errorf("PromoteWeak(%v, %s scalar) = %v, NumPy says %s", a, k.name, got, want)
			}
		}
	}
}

func TestTypeStrRoundTrip(t *testing.T) {
	f := numpy(t)
	for _, d := range dtype.All {
		if got, want := d.TypeStr(), f.TypeStr[d.String()]; got != want {
			t.Errorf("%v.TypeStr() = %q, NumPy says %q", d, got, want)
		}
		for _, s := range []string{d.TypeStr(), d.String()} {
			got, big, err := dtype.Parse(s)
			if err != nil || got != d || big {
				t.Errorf("Parse(%q) = %v, %v, %v", s, got, big, err)
			}
		}
	}
	if d, big, err := dtype.Parse(">i4"); err != nil || d != dtype.Int32 || !big {
		t.Errorf("Parse(>i4) = %v, %v, %v", d, big, err)
	}
	for _, bad := range []string{"", "<f3", "<x8", "float16", "<f"} {
		if _, _, err := dtype.Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
}

// same compares a value we converted with NumPy's JSON form of it.
func same(t *testing.T, what string, got dtype.Slice, i int, want any) {
	t.Helper()
	g := got.Elem(i)
	switch w := want.(type) {
	case bool:
		if g != w {
			t.Errorf("%s: %v, NumPy %v", what, g, w)
		}
	case string: // an integer, exactly, or a non-finite float
		switch v := g.(type) {
		case float32, float64:
			if f := got.Float(i); !eqNaN(f, num(w)) {
				t.Errorf("%s: %v, NumPy %v", what, g, w)
			}
		default:
			if jsonInt(v) != w {
				t.Errorf("%s: %v, NumPy %v", what, g, w)
			}
		}
	case float64:
		if f := got.Float(i); f != w || math.Signbit(f) != math.Signbit(w) {
			t.Errorf("%s: %v, NumPy %v", what, f, w)
		}
	case []any:
		c := dtype.Convert(got.Slice(i, i+1), dtype.Complex128).Complex128s()[0]
		re, im := num(w[0]), num(w[1])
		if !eqNaN(real(c), re) || !eqNaN(imag(c), im) {
			t.Errorf("%s: %v, NumPy (%v, %v)", what, c, re, im)
		}
	default:
		t.Fatalf("%s: unexpected NumPy value %T", what, want)
	}
}

func num(v any) float64 {
	switch v := v.(type) {
	case float64:
		return v
	case string:
		switch v {
		case "nan":
			return math.NaN()
		case "inf":
			return math.Inf(1)
		case "-inf":
			return math.Inf(-1)
		}
	}
	return math.NaN()
}

func eqNaN(a, b float64) bool { return a == b || (a != a && b != b) }

func jsonInt(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestConvertMatchesNumPy(t *testing.T) {
	f := numpy(t)
	src := make([]float64, len(f.Specials))
	for i, v := range f.Specials {
		x, err := strconv.ParseFloat(v, 64)
		if err != nil {
			t.Fatal(err)
		}
		src[i] = x
	}
	isrc := dtype.OfInt64(f.Ints)
	for _, d := range dtype.All {
		got := dtype.Convert(dtype.OfFloat64(src), d)
		for i, want := range f.Casts[d.String()] {
			same(t, "float64 "+jsonInt(src[i])+" as "+d.String(), got, i, want)
		}
		got = dtype.Convert(isrc, d)
		for i, want := range f.ICasts[d.String()] {
			same(t, "int64 "+jsonInt(f.Ints[i])+" as "+d.String(), got, i, want)
		}
	}
}

func TestSliceStorage(t *testing.T) {
	for _, d := range dtype.All {
		s := dtype.Make(d, 5)
		if s.Len() != 5 || len(s.Bytes()) != 5*d.Size() || s.DType() != d {
			t.Fatalf("%v: Make gives %v with %d bytes", d, s, len(s.Bytes()))
		}
		dtype.Copy(s, dtype.OfFloat64([]float64{1, 2, 3, 4, 5}))
		sub := s.Slice(1, 4)
		if sub.Len() != 3 || sub.Float(0) != 2 && d != dtype.Bool {
			t.Errorf("%v: Slice(1, 4) = %v starting %v", d, sub, sub.Float(0))
		}
		back, err := dtype.FromBytes(d, sub.Bytes())
		if err != nil || !dtype.Equal(back, sub) {
			t.Errorf("%v: FromBytes of a sub-slice: %v, %v", d, back, err)
		}
		js, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		var viaJSON dtype.Slice
		if err := json.Unmarshal(js, &viaJSON); err != nil || !dtype.Equal(viaJSON, s) {
			t.Errorf("%v: JSON round trip %s -> %v, %v", d, js, viaJSON, err)
		}
		g, err := s.GobEncode()
		if err != nil {
			t.Fatal(err)
		}
		var viaGob dtype.Slice
		if err := viaGob.GobDecode(g); err != nil || !dtype.Equal(viaGob, s) {
			t.Errorf("%v: gob round trip -> %v, %v", d, viaGob, err)
		}
	}
	img := dtype.Make(dtype.Uint8, 1000)
	if len(img.Bytes()) != 1000 {
		t.Errorf("uint8 storage takes %d bytes for 1000 values", len(img.Bytes()))
	}
	if _, err := dtype.FromBytes(dtype.Int32, make([]byte, 7)); err == nil {
		t.Error("7 bytes accepted as int32 values")
	}
	v := []float64{1, 2}
	s := dtype.OfFloat64(v)
	s.Float64s()[1] = 5
	if v[1] != 5 {
		t.Error("OfFloat64 copied instead of sharing")
	}
	be := dtype.OfInt64([]int64{1})
	be.SwapBytes()
	if be.Int64s()[0] != 1<<56 {
		t.Errorf("SwapBytes: %x", be.Int64s()[0])
	}
}
