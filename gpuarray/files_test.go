package gpuarray

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/internal/testenv"
)

// runPy runs a Python script with the test virtualenv's python (NumPy, zarr-python); args
// are its sys.argv[1:].
func runPy(t *testing.T, script string, args ...string) string {
	t.Helper()
	py := testenv.Python(t)
	cmd := exec.Command(py, append([]string{"-c", script}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("python: %v\n%s", err, out)
	}
	return string(out)
}

// readF8 reads a file of little-endian float64 values (what NumPy's tofile wrote).
func readF8(t *testing.T, path string) []float64 {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	v := make([]float64, len(b)/8)
	for i := range v {
		v[i] = math.Float64frombits(binary.LittleEndian.Uint64(b[8*i:]))
	}
	return v
}

func writeF8(t *testing.T, path string, v []float64) {
	t.Helper()
	b := make([]byte, 8*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint64(b[8*i:], math.Float64bits(x))
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

// sameBits compares values bit for bit (NaNs of the same payload are equal).
func sameBits(t *testing.T, what string, got, want []float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
			t.Fatalf("%s: element %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

const npyCases = `
import sys, numpy as np
d = sys.argv[1]
rng = np.random.default_rng(7)
base = rng.standard_normal((7, 5, 3)) * 1000
for ts in ['<f8', '>f8', '<f4', '>f4', '<i4', '>i8', '|u1', '|i1', '|b1', '<u2', '>i2', '<u8', '<c16', '>c8']:
    a = base.astype(ts) if ts[1] != 'u' else np.abs(base).astype(ts)
    if ts[1] == 'c':
        a = a + 1j * base[::-1].astype(ts)
    for order in 'CF':
        name = ts.replace('<', 'le').replace('>', 'be').replace('|', '') + order
        np.save(f'{d}/{name}.npy', np.asarray(a, order=order))
        # the values in C order and this machine's byte order: what the array must hold
        open(f'{d}/{name}.raw', 'wb').write(np.ascontiguousarray(a.astype(a.dtype.newbyteorder('='))).tobytes())
        print(name, a.dtype.name)
`

// computedBytes computes x and returns its values' bytes (row-major, native byte order).
func computedBytes(t *testing.T, x *Array, opts ...ComputeOption) []byte {
	t.Helper()
	c, err := x.Compute(opts...)
	if err != nil {
		t.Fatal(err)
	}
	v, err := c.n.Values()
	if err != nil {
		t.Fatal(err)
	}
	return v.Bytes()
}

func TestLoadNpyFromNumPy(t *testing.T) {
	dir := t.TempDir()
	fields := strings.Fields(runPy(t, npyCases, dir))
	if len(fields) != 2*28 {
		t.Fatalf("python wrote %v", fields)
	}
	for i := 0; i < len(fields); i += 2 {
		name, dtName := fields[i], fields[i+1]
		want, err := os.ReadFile(filepath.Join(dir, name+".raw"))
		if err != nil {
			t.Fatal(err)
		}
		for _, chunks := range [][]int{{3, 2, 2}, {7, 5, 3}, {2, 5, 3}} {
			x := LoadNpy(filepath.Join(dir, name+".npy"), Chunks(chunks...))
			if err := x.Err(); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if got := x.Shape(); len(got) != 3 || got[0] != 7 || got[1] != 5 || got[2] != 3 {
				t.Fatalf("%s: shape %v", name, got)
			}
			if x.DType().String() != dtName {
				t.Fatalf("%s: dtype %v, want %v", name, x.DType(), dtName)
			}
			if got := computedBytes(t, x, Threads(2)); !bytes.Equal(got, want) {
				t.Fatalf("%s chunks %v: the values differ from NumPy's", name, chunks)
			}
		}
	}
	f8 := readF8(t, filepath.Join(dir, "lef8C.raw"))
	got, err := LoadNpy(filepath.Join(dir, "bef8F.npy"), Chunks(4, 4, 1)).ToSlice(Inline())
	if err != nil {
		t.Fatal(err)
	}
	sameBits(t, "big-endian Fortran float64", got, f8)
	// A slice of a file-backed array reads through the same tasks.
	x := LoadNpy(filepath.Join(dir, "lef8C.npy"), Chunks(2, 2, 2))
	got, err = x.Slice(SpanStep(1, 7, 2), At(3), Every(-1)).Mul(2).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	all := f8
	var want []float64
	for i := 1; i < 7; i += 2 {
		for k := 2; k >= 0; k-- {
			want = append(want, 2*all[i*15+3*3+k])
		}
	}
	sameBits(t, "slice", got, want)
	sum, err := LoadNpy(filepath.Join(dir, "beF.npy")).Sum().Float64()
	if err == nil {
		t.Fatalf("a missing file summed to %v", sum)
	}
}

func TestSaveNpyToNumPy(t *testing.T) {
	dir := t.TempDir()
	rs := NewRandomState(3)
	x := rs.Normal(0, 1, Shape(37, 23), Chunks(10, 7)).Mul(3)
	y := rs.Uniform(0, 1, Shape(11, 4, 5), Chunks(4, 3, 2), WithDType(Float32))
	for name, a := range map[string]*Array{"x": x, "y": y, "s": x.Sum(1), "v": x.Slice(Every(2), All()).T()} {
		if err := SaveNpy(filepath.Join(dir, name+".npy"), a); err != nil {
			t.Fatal(err)
		}
		vals, err := a.ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		writeF8(t, filepath.Join(dir, name+".want"), vals)
	}
	out := runPy(t, `
import sys, numpy as np
d = sys.argv[1]
for name, dt, shape in [('x', '<f8', (37, 23)), ('y', '<f4', (11, 4, 5)), ('s', '<f8', (37,)), ('v', '<f8', (23, 19))]:
    a = np.load(f'{d}/{name}.npy')
    want = np.fromfile(f'{d}/{name}.want', '<f8').reshape(shape)
    assert a.dtype == np.dtype(dt), (name, a.dtype)
    assert a.shape == shape, (name, a.shape)
    assert np.array_equal(a.astype('<f8'), want), name
    print(name, 'ok')
`, dir)
	if strings.Count(out, "ok") != 4 {
		t.Fatalf("numpy: %s", out)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("temporary file left: %s", e.Name())
		}
	}
}

func TestNpz(t *testing.T) {
	dir := t.TempDir()
	runPy(t, `
import sys, numpy as np
d = sys.argv[1]
a = np.arange(60.0).reshape(6, 10) * 0.375
b = np.asfortranarray(np.arange(24, dtype='>i4').reshape(4, 6))
np.savez(f'{d}/plain.npz', a=a, b=b)
np.savez_compressed(f'{d}/packed.npz', a=a, b=b)
`, dir)
	for _, file := range []string{"plain.npz", "packed.npz"} {
		p := filepath.Join(dir, file)
		names, err := NpzNames(p)
		if err != nil || strings.Join(names, ",") != "a,b" {
			t.Fatalf("%s: names %v, %v", file, names, err)
		}
		a, err := LoadNpz(p, "a", Chunks(4, 3)).ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range a {
			if v != float64(i)*0.375 {
				t.Fatalf("%s a[%d] = %v", file, i, v)
			}
		}
		b, err := LoadNpz(p, "b", Chunks(3, 4)).ToSlice()
		if err != nil {
			t.Fatal(err)
		}
		for i, v := range b {
			if v != float64(i) {
				t.Fatalf("%s b[%d] = %v", file, i, v)
			}
		}
		if err := LoadNpz(p, "c").Err(); err == nil || !strings.Contains(err.Error(), "[a b]") {
			t.Fatalf("missing member: %v", err)
		}
	}
}

func TestFromFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "raw.bin")
	b := make([]byte, 100+4*6*8)
	for i := 0; i < 48; i++ {
		binary.BigEndian.PutUint32(b[100+4*i:], uint32(int32(i-20)))
	}
	if err := os.WriteFile(p, b, 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := FromFile(p, ">i4", []int{6, 8}, 100, Chunks(4, 3)).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range got {
		if v != float64(i-20) {
			t.Fatalf("element %d = %v", i, v)
		}
	}
	if err := FromFile(p, ">i4", []int{6, 9}, 100).Err(); err == nil || !strings.Contains(err.Error(), "needs") {
		t.Fatalf("short file: %v", err)
	}
	if err := FromFile(p, "<U4", []int{2}, 0).Err(); err == nil {
		t.Fatal("a string dtype was accepted")
	}
}

func TestNpyErrors(t *testing.T) {
	dir := t.TempDir()
	x := NewRandomState(1).Normal(0, 1, Shape(100, 50), Chunks(30, 50))
	p := filepath.Join(dir, "x.npy")
	if err := SaveNpy(p, x); err != nil {
		t.Fatal(err)
	}
	full, _ := os.ReadFile(p)
	// Truncated before opening: LoadNpy says so.
	short := filepath.Join(dir, "short.npy")
	os.WriteFile(short, full[:len(full)-8], 0o644)
	if err := LoadNpy(short).Err(); err == nil || !strings.Contains(err.Error(), "truncated") || !strings.Contains(err.Error(), "short.npy") {
		t.Fatalf("truncated file: %v", err)
	}
	// Truncated after opening: the task that reads past the end names the file and chunk.
	lazy := LoadNpy(p, Chunks(30, 50))
	if err := os.Truncate(p, int64(len(full))-8*50*5); err != nil {
		t.Fatal(err)
	}
	_, err := lazy.Sum().Float64()
	if err == nil || !strings.Contains(err.Error(), "x.npy") || !strings.Contains(err.Error(), "[90 0]") || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("file truncated under a lazy array: %v", err)
	}
	// A failed save leaves the old file and no temporary file.
	os.WriteFile(p, full, 0o644)
	if err := SaveNpy(p, lazy.Add(1)); err != nil {
		t.Fatal(err)
	}
	os.Truncate(short, 200)
	bad := filepath.Join(dir, "bad.npy")
	os.WriteFile(bad, []byte("old"), 0o644)
	if err := SaveNpy(bad, LoadNpy(p).Add(LoadNpy(short))); err == nil {
		t.Fatal("saving a broken array succeeded")
	}
	if b, _ := os.ReadFile(bad); string(b) != "old" {
		t.Fatalf("a failed save changed the file: %q", b)
	}
	// Wrong dtypes and headers.
	for name, hdr := range map[string]string{
		"str":    "{'descr': '<U4', 'fortran_order': False, 'shape': (2,), }",
		"rec":    "{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (2,), }",
		"noshp":  "{'descr': '<f8', 'fortran_order': False, }",
		"garble": "{'descr': '<f8', 'fortran_order': Maybe, 'shape': (2,), }",
	} {
		b := []byte("\x93NUMPY\x01\x00")
		b = binary.LittleEndian.AppendUint16(b, uint16(len(hdr)+1))
		b = append(append(b, hdr...), '\n')
		b = append(b, make([]byte, 16)...)
		f := filepath.Join(dir, name+".npy")
		os.WriteFile(f, b, 0o644)
		if err := LoadNpy(f).Err(); err == nil || !strings.Contains(err.Error(), name+".npy") {
			t.Fatalf("%s: %v", name, err)
		}
	}
}

// TestWriteEveryDTypeToPython: arrays of every dtype (read from NumPy's files) are written by
// SaveNpy and ToZarr (v2 and v3) and read back by NumPy and zarr-python, equal to the
// originals, dtype included.
func TestWriteEveryDTypeToPython(t *testing.T) {
	dir := t.TempDir()
	fields := strings.Fields(runPy(t, npyCases, dir))
	var names []string
	for i := 0; i < len(fields); i += 2 {
		name := fields[i]
		if !strings.HasSuffix(name, "C") {
			continue
		}
		x := LoadNpy(filepath.Join(dir, name+".npy"), Chunks(3, 5, 2))
		if err := SaveNpy(filepath.Join(dir, name+".out.npy"), x.Add(0).AsType(x.DType())); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, f := range []int{2, 3} {
			if err := x.ToZarr(filepath.Join(dir, fmt.Sprintf("%s.v%d.zarr", name, f)), ZarrFormat(f), ZarrChunks(4, 5, 3)); err != nil {
				t.Fatalf("%s v%d: %v", name, f, err)
			}
		}
		names = append(names, name)
	}
	out := runPy(t, `
import sys, numpy as np, zarr
d = sys.argv[1]
for name in sys.argv[2:]:
    want = np.load(f'{d}/{name}.npy')
    got = np.load(f'{d}/{name}.out.npy')
    assert got.dtype == want.dtype.newbyteorder('=') and np.array_equal(got, want), (name, got.dtype, want.dtype)
    for f in (2, 3):
        z = zarr.open_array(f'{d}/{name}.v{f}.zarr', mode='r')
        assert z.dtype == want.dtype.newbyteorder('<') or z.dtype == want.dtype, (name, f, z.dtype)
        assert np.array_equal(z[:], want), (name, f)
    print(name, 'ok')
`, append([]string{dir}, names...)...)
	if n := strings.Count(out, " ok"); n != len(names) || n != 14 {
		t.Fatalf("python checked %d of %d:\n%s", n, len(names), out)
	}
}
