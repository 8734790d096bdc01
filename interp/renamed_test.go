package interp

import (
	"reflect"
	"strings"
	"testing"

	"github.com/traefik/yaegi/interp"

	"github.com/gpunotes/gpunotes/interp/preload"
)

// TestRenamedDidYouMean checks the compile error of a cell that calls an old spelling of a
// preloaded function once the old spelling is gone (here: removed from the symbol table, as
// the release after the deprecation removes it): go build's "undefined: gpuarray.Fft", with
// the new name, and a near name for a plain typo.
func TestRenamedDidYouMean(t *testing.T) {
	const gpuarrayKey = "github.com/gpunotes/gpunotes/gpuarray/gpuarray"
	syms := interp.Exports{}
	for k, v := range preload.Symbols {
		syms[k] = v
	}
	without := map[string]reflect.Value{}
	for n, v := range preload.Symbols[gpuarrayKey] {
		if n != "Fft" {
			without[n] = v
		}
	}
	syms[gpuarrayKey] = without
	s, err := New(Options{Symbols: syms, Preload: preload.Packages, Renamed: preload.Renamed})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ cell, want string }{
		{"y := gpuarray.Fft(nil)\n_ = y", "undefined: gpuarray.Fft (did you mean gpuarray.FFT? Fft is its old name)"},
		{"gpuarray.Fft(nil)", "undefined: gpuarray.Fft (did you mean gpuarray.FFT?"},
		{"func spectrum() *gpuarray.Array { return gpuarray.Fft(nil) }", "undefined: gpuarray.Fft (did you mean gpuarray.FFT?"},
		{"import g \"github.com/gpunotes/gpunotes/gpuarray\"\nz := g.Fft(nil)\n_ = z", "undefined: g.Fft (did you mean g.FFT?"},
		{"x := gpuarray.Zero(gpuarray.Shape(3))\n_ = x", "undefined: gpuarray.Zero (did you mean gpuarray.Zeros?)"},
	} {
		_, _, err := run(t, s, c.cell)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want it to contain %q", c.cell, err, c.want)
		}
	}
}

// TestRenamedStillCompiles checks that the old spellings compile while they are deprecated.
func TestRenamedStillCompiles(t *testing.T) {
	s, err := New(Options{Symbols: preload.Symbols, Preload: preload.Packages, Renamed: preload.Renamed})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := run(t, s, "import \"fmt\"\nf := gpuarray.Fft\ng := gpuarray.FFT\nfmt.Println(f != nil, g != nil)"); err != nil {
		t.Fatal(err)
	}
}
