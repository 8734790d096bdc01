package gpuarray

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// zarrCases writes Zarr arrays with zarr-python 3 (formats 2 and 3, every codec we read),
// each with the values it holds as little-endian float64 in NAME.want.
const zarrCases = `
import sys, numpy as np, zarr, numcodecs
from zarr.codecs import BloscCodec, GzipCodec, ZstdCodec, BytesCodec, TransposeCodec, Crc32cCodec
d = sys.argv[1]
rng = np.random.default_rng(11)
data = rng.standard_normal((45, 33)) * 100

def case(name, dtype='<f8', fill=0, partial=False, **kw):
    a = zarr.create_array(store=f'{d}/{name}', shape=data.shape, chunks=(10, 8), dtype=dtype, fill_value=fill,
                          config={'write_empty_chunks': False}, **kw)
    want = data.astype(dtype)
    if partial:  # rows 20 on are never written: their chunks are missing and read as fill
        a[:20, :] = want[:20]
        want = want.copy()
        want[20:] = fill
    else:
        a[:] = want
    want.astype('<f8').tofile(f'{d}/{name}.want')
    print(name)

# zarr-python 2's default: blosc, lz4 inside, byte shuffle
case('v2_blosc_lz4', zarr_format=2, compressors=numcodecs.Blosc(cname='lz4', clevel=5, shuffle=numcodecs.Blosc.SHUFFLE))
case('v2_blosc_zstd', zarr_format=2, compressors=numcodecs.Blosc(cname='zstd', clevel=3, shuffle=numcodecs.Blosc.NOSHUFFLE))
case('v2_blosc_zlib_f4', dtype='<f4', zarr_format=2, compressors=numcodecs.Blosc(cname='zlib', clevel=4, shuffle=numcodecs.Blosc.SHUFFLE))
case('v2_blosc_big_blocks', zarr_format=2, compressors=numcodecs.Blosc(cname='lz4', clevel=9, shuffle=numcodecs.Blosc.SHUFFLE, blocksize=256))
case('v2_zstd', zarr_format=2)
case('v2_zlib', zarr_format=2, compressors=numcodecs.Zlib(level=6))
case('v2_gzip', zarr_format=2, compressors=numcodecs.GZip(level=6))
case('v2_lz4', zarr_format=2, compressors=numcodecs.LZ4())
case('v2_none', zarr_format=2, compressors=None)
case('v2_F_big_slash', dtype='>f8', zarr_format=2, order='F', chunk_key_encoding={'name': 'v2', 'separator': '/'})
case('v2_i4_missing', dtype='<i4', fill=-7, partial=True, zarr_format=2)
case('v2_nan_missing', fill=float('nan'), partial=True, zarr_format=2)
case('v3_zstd')
case('v3_blosc', compressors=BloscCodec())
case('v3_blosc_lz4', compressors=BloscCodec(cname='lz4', shuffle='shuffle'))
case('v3_gzip', compressors=GzipCodec(level=3))
case('v3_none', compressors=None)
case('v3_big', serializer=BytesCodec(endian='big'))
case('v3_transpose', filters=[TransposeCodec(order=(1, 0))])
case('v3_crc32c', compressors=[ZstdCodec(level=1), Crc32cCodec()])
case('v3_v2keys', chunk_key_encoding={'name': 'v2', 'separator': '.'})
case('v3_u2_missing', dtype='<u2', fill=9, partial=True)
case('v3_f4_missing', dtype='<f4', fill=-1.5, partial=True)
case('v3_i8', dtype='>i8', serializer=BytesCodec(endian='big'))
case('v3_sharded', shards=(20, 16))
case('v3_sharded_missing', dtype='<i2', fill=-3, partial=True, shards=(40, 16), compressors=BloscCodec(cname='lz4', shuffle='shuffle'))
`

func TestOpenZarrFromPython(t *testing.T) {
	dir := t.TempDir()
	names := strings.Fields(runPy(t, zarrCases, dir))
	if len(names) < 20 {
		t.Fatalf("python wrote %v", names)
	}
	for _, name := range names {
		want := readF8(t, filepath.Join(dir, name+".want"))
		x := OpenZarr(filepath.Join(dir, name))
		if err := x.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		wantChunks := []int{10, 8}
		if strings.Contains(name, "sharded") { // a task reads a whole shard
			wantChunks = map[bool][]int{true: {40, 16}, false: {20, 16}}[strings.Contains(name, "missing")]
		}
		if c := x.Chunks(); c[0][0] != wantChunks[0] || c[1][0] != wantChunks[1] {
			t.Fatalf("%s: chunks %v, want the store's %v", name, c, wantChunks)
		}
		got, err := x.ToSlice()
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sameBits(t, name, got, want)
		// Rechunked: a task reads every store chunk its box touches.
		got, err = OpenZarr(filepath.Join(dir, name), Chunks(17, 13)).ToSlice(Inline())
		if err != nil {
			t.Fatalf("%s rechunked: %v", name, err)
		}
		sameBits(t, name+" rechunked", got, want)
	}
}

func TestToZarrToPython(t *testing.T) {
	dir := t.TempDir()
	rs := NewRandomState(5)
	x := rs.Normal(1, 10, Shape(53, 31), Chunks(20, 10))
	vals, err := x.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	writeF8(t, filepath.Join(dir, "x.want"), vals)
	y := x.AsType(Float32)
	yv, err := y.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	writeF8(t, filepath.Join(dir, "y.want"), yv)
	var cases []string
	for _, f := range []int{2, 3} {
		for _, c := range []string{"", "none", "zstd", "gzip", "zlib", "blosc", "blosc-zstd"} {
			if f == 3 && c == "zlib" {
				continue
			}
			name := strings.Trim(strings.Join([]string{"v", string(rune('0' + f)), "_", c}, ""), "_")
			opts := []ZarrOption{ZarrFormat(f), ZarrAttributes(map[string]any{"units": "m", "n": 3})}
			if c != "" {
				opts = append(opts, ZarrCompressor(c))
			}
			if err := x.ToZarr(filepath.Join(dir, name+"_x"), opts...); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if err := y.ToZarr(filepath.Join(dir, name+"_y"), append(opts, ZarrChunks(16, 31))...); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			cases = append(cases, name)
		}
	}
	out := runPy(t, `
import sys, numpy as np, zarr
d = sys.argv[1]
x = np.fromfile(f'{d}/x.want', '<f8').reshape(53, 31)
y = np.fromfile(f'{d}/y.want', '<f8').reshape(53, 31)
for name in sys.argv[2:]:
    a = zarr.open_array(f'{d}/{name}_x', mode='r')
    assert a.dtype == np.float64 and a.chunks == (20, 10), (name, a.dtype, a.chunks)
    assert np.array_equal(a[:], x), name
    assert dict(a.attrs) == {'units': 'm', 'n': 3}, (name, dict(a.attrs))
    b = zarr.open_array(f'{d}/{name}_y', mode='r')
    assert b.dtype == np.float32 and b.chunks == (16, 31), (name, b.dtype)
    assert np.array_equal(b[:].astype('<f8'), y), name
    print(name, a.metadata.zarr_format, 'ok')
`, append([]string{dir}, cases...)...)
	if n := strings.Count(out, " ok"); n != len(cases) {
		t.Fatalf("zarr-python read %d of %d stores:\n%s", n, len(cases), out)
	}
}

func TestZarrErrors(t *testing.T) {
	dir := t.TempDir()
	x := NewRandomState(9).Normal(0, 1, Shape(40, 30), Chunks(10, 10))
	for _, f := range []int{2, 3} {
		p := filepath.Join(dir, "s"+string(rune('0'+f)))
		if err := x.ToZarr(p, ZarrFormat(f), ZarrCompressor("blosc")); err != nil {
			t.Fatal(err)
		}
		// A corrupt chunk: the error names the chunk's file and index.
		key := map[int]string{2: "1.2", 3: "c/1/2"}[f]
		chunk := filepath.Join(p, filepath.FromSlash(key))
		b, err := os.ReadFile(chunk)
		if err != nil {
			t.Fatal(err)
		}
		for i := 16; i < len(b); i += 7 {
			b[i] ^= 0x5a
		}
		os.WriteFile(chunk, b, 0o644)
		_, err = OpenZarr(p).Sum().Float64()
		if err == nil || !strings.Contains(err.Error(), "[1 2]") || !strings.Contains(err.Error(), filepath.FromSlash(key)) {
			t.Fatalf("v%d corrupt chunk: %v", f, err)
		}
		// A truncated chunk.
		os.WriteFile(chunk, b[:len(b)/2], 0o644)
		if _, err = OpenZarr(p).Sum().Float64(); err == nil || !strings.Contains(err.Error(), "[1 2]") {
			t.Fatalf("v%d truncated chunk: %v", f, err)
		}
		// A codec we do not know, and metadata that is not JSON.
		meta := filepath.Join(p, map[int]string{2: ".zarray", 3: "zarr.json"}[f])
		m, _ := os.ReadFile(meta)
		os.WriteFile(meta, []byte(strings.Replace(string(m), "blosc", "snappy9", 1)), 0o644)
		if err := OpenZarr(p).Err(); err == nil || !strings.Contains(err.Error(), "snappy9") || !strings.Contains(err.Error(), p) {
			t.Fatalf("v%d unknown codec: %v", f, err)
		}
		os.WriteFile(meta, m[:len(m)/2], 0o644)
		if err := OpenZarr(p).Err(); err == nil || !strings.Contains(err.Error(), p) {
			t.Fatalf("v%d broken metadata: %v", f, err)
		}
	}
	// A write that fails leaves no store, and no temporary directory.
	npyPath := filepath.Join(dir, "x.npy")
	if err := SaveNpy(npyPath, x); err != nil {
		t.Fatal(err)
	}
	lazy := LoadNpy(npyPath, Chunks(10, 30))
	os.Truncate(npyPath, 1000)
	out := filepath.Join(dir, "out.zarr")
	if err := lazy.ToZarr(out); err == nil || !strings.Contains(err.Error(), "truncated") {
		t.Fatalf("ToZarr of a broken array: %v", err)
	}
	ents, _ := os.ReadDir(dir)
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "out.zarr") || strings.Contains(e.Name(), ".tmp-") {
			t.Fatalf("a failed write left %s", e.Name())
		}
	}
	// An existing store is replaced only when asked.
	if err := x.ToZarr(out); err != nil {
		t.Fatal(err)
	}
	if err := x.Add(1).ToZarr(out); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Fatalf("overwrite without ZarrOverwrite: %v", err)
	}
	if err := x.Add(1).ToZarr(out, ZarrOverwrite()); err != nil {
		t.Fatal(err)
	}
	s1, _ := x.Add(1).Sum().Float64()
	s2, err := OpenZarr(out).Sum().Float64()
	if err != nil || s1 != s2 {
		t.Fatalf("overwritten store sums to %v (%v), want %v", s2, err, s1)
	}
}

func TestZarrGroups(t *testing.T) {
	dir := t.TempDir()
	runPy(t, `
import sys, numpy as np, zarr
d = sys.argv[1]
for f in (2, 3):
    g = zarr.open_group(f'{d}/g{f}', mode='w', zarr_format=f)
    g.attrs['title'] = 'run 7'
    g.attrs['scale'] = [1, 2.5]
    a = g.create_array('temp', shape=(6, 4), chunks=(3, 4), dtype='f8')
    a[:] = np.arange(24.0).reshape(6, 4)
    a.attrs['units'] = 'K'
    sub = g.create_group('sub')
    sub.create_array('b', shape=(3,), dtype='i2')[:] = [1, 2, 3]
`, dir)
	for _, f := range []string{"g2", "g3"} {
		g := filepath.Join(dir, f)
		names, err := ZarrList(g)
		if err != nil || strings.Join(names, ",") != "sub/,temp" {
			t.Fatalf("%s: list %v, %v", f, names, err)
		}
		attrs, err := ZarrAttrs(g)
		if err != nil || attrs["title"] != "run 7" {
			t.Fatalf("%s: attrs %v, %v", f, attrs, err)
		}
		if a, _ := ZarrAttrs(filepath.Join(g, "temp")); a["units"] != "K" {
			t.Fatalf("%s/temp: attrs %v", f, a)
		}
		s, err := OpenZarr(filepath.Join(g, "temp")).Sum().Float64()
		if err != nil || s != 276 {
			t.Fatalf("%s/temp: sum %v, %v", f, s, err)
		}
		s, err = OpenZarr(filepath.Join(g, "sub", "b")).Sum().Float64()
		if err != nil || s != 6 {
			t.Fatalf("%s/sub/b: sum %v, %v", f, s, err)
		}
		if err := OpenZarr(g).Err(); err == nil || !strings.Contains(err.Error(), "group") {
			t.Fatalf("%s opened as an array: %v", f, err)
		}
	}
}
