package gpuarray

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

// arrowStrings lays ss out in Arrow's layout.
func arrowStrings(ss []string) ([]int64, []byte) {
	off := make([]int64, 1, len(ss)+1)
	var data []byte
	for _, s := range ss {
		data = append(data, s...)
		off = append(off, int64(len(data)))
	}
	return off, data
}

// gpuTestStrings draws n strings of a few multi-byte and empty pieces.
func gpuTestStrings(rs *rand.Rand, n int) []string {
	alpha := []string{"a", "b", "ab", "é", "日本", ""}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range rs.IntN(6) {
			b.WriteString(alpha[rs.IntN(len(alpha))])
		}
		out[i] = b.String()
	}
	return out
}

// TestGPUDeviceStrings holds strings on the GPU and checks that they come back equal, that
// each string kernel's result (held on the GPU, read by fused expressions and reductions in
// place) is Go's, that row-wise equality through positions is Go's ==, and that the device
// dictionary encoding gives equal strings equal codes and different strings different ones.
func TestGPUDeviceStrings(t *testing.T) {
	needGPU(t)
	rs := rand.New(rand.NewPCG(33, 1))
	ss := append(gpuTestStrings(rs, 300_001), "", "ab", strings.Repeat("日本", 50))
	off, data := arrowStrings(ss)
	ds, err := PersistStrings(off, data, OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	if ds.Len() != len(ss) || !ds.On(OnGPU()) || ds.Where() != "gpu 0" {
		t.Fatalf("Len %d, On %v, Where %q", ds.Len(), ds.On(OnGPU()), ds.Where())
	}
	o2, d2, err := ds.Strings()
	if err != nil || !slices.Equal(o2, off) || string(d2) != string(data) {
		t.Fatalf("the strings came back different (err %v)", err)
	}
	// Lengths: the kernel's, summed on the device, and element by element.
	lens, err := ds.Match("len", "")
	if err != nil {
		t.Fatal(err)
	}
	if w := lens.Where(); !strings.HasPrefix(w, "gpu") {
		t.Fatalf("lengths held on %q", w)
	}
	got, err := lens.ToSliceInt64(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	var total int64
	for i, s := range ss {
		total += int64(utf8.RuneCountInString(s))
		if got[i] != int64(utf8.RuneCountInString(s)) {
			t.Fatalf("len(%q) = %d", s, got[i])
		}
	}
	if s, err := lens.Sum().Float64(OnGPU()); err != nil || int64(s) != total {
		t.Fatalf("sum of lengths %v, want %d (%v)", s, total, err)
	}
	ref := map[string]func(s, lit string) bool{"eq": func(s, lit string) bool { return s == lit }, "startswith": strings.HasPrefix, "endswith": strings.HasSuffix, "contains": strings.Contains}
	for op, f := range ref {
		for _, lit := range []string{"ab", "", "日本", "bé"} {
			m, err := ds.Match(op, lit)
			if err != nil {
				t.Fatal(err)
			}
			bs, err := m.ToSliceBool(OnGPU())
			if err != nil {
				t.Fatal(err)
			}
			var want int64
			for i, s := range ss {
				if bs[i] != f(s, lit) {
					t.Fatalf("%s(%q, %q) = %v", op, s, lit, bs[i])
				}
				if bs[i] {
					want++
				}
			}
			// Fused with the rest: a count of the matches on the device.
			if c, err := m.AsType(Int64).Sum().Float64(OnGPU()); err != nil || int64(c) != want {
				t.Fatalf("%s %q: %v matches summed on the GPU, want %d (%v)", op, lit, c, want, err)
			}
		}
	}
	// Row-wise equality of two columns through positions.
	other := gpuTestStrings(rs, 5000)
	oo, od := arrowStrings(other)
	ds2, err := PersistStrings(oo, od, OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	const rows = 100_000
	ia, ib := make([]int64, rows), make([]int64, rows)
	for i := range ia {
		ia[i], ib[i] = rs.Int64N(int64(len(ss))), rs.Int64N(int64(len(other)))
	}
	eq, err := ds.EqualAt(FromSliceInt64(ia, Chunks(30_000)), ds2, FromSliceInt64(ib, Chunks(30_000)), OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	eb, err := eq.ToSliceBool(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	hits := 0
	for i := range eb {
		if eb[i] != (ss[ia[i]] == other[ib[i]]) {
			t.Fatalf("row %d: %q == %q gave %v", i, ss[ia[i]], other[ib[i]], eb[i])
		}
		if eb[i] {
			hits++
		}
	}
	if hits == 0 {
		t.Fatal("no equal rows: the check of equality checked nothing")
	}
	// Dictionary encoding.
	codes, first, note, err := ds.Encode(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	t.Log(note)
	cs, err := codes.ToSliceInt64(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	distinct := map[string]int64{}
	for i, s := range ss {
		c := cs[i]
		if c < 0 || c >= int64(len(first)) || ss[first[c]] != s {
			t.Fatalf("string %d %q: code %d of %d", i, s, c, len(first))
		}
		if d, ok := distinct[s]; ok && d != c {
			t.Fatalf("%q has codes %d and %d", s, d, c)
		}
		distinct[s] = c
	}
	if len(distinct) != len(first) {
		t.Fatalf("%d distinct strings, %d codes", len(distinct), len(first))
	}
	t.Logf("%d strings, %d distinct", len(ss), len(first))
}
