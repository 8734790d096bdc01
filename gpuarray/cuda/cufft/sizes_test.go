package cufft

import (
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/fft"
)

// TestPlanSizes: transforms whose length, batch or stride fit cufftPlanMany's C ints are
// planned in one plan (a 1-D line of 1e8, 2^31 - 1 elements at the limit); a longer line or
// more lines than a C int counts are refused with the sizes (the four-step decomposition is
// not written), never planned with counts that wrap.
func TestPlanSizes(t *testing.T) {
	cases := []struct {
		l    fft.Lines
		n    int
		want string // "" for planned
	}{
		{fft.Lines{Outer: 1, N: 100_000_000, Inner: 1}, 100_000_000, ""},
		{fft.Lines{Outer: 1, N: planLimit, Inner: 1}, planLimit, ""},
		{fft.Lines{Outer: 20000, N: 20000, Inner: 1}, 20000, ""},
		{fft.Lines{Outer: 1, N: 1 << 31, Inner: 1}, 1 << 31, "four-step"},
		{fft.Lines{Outer: 1 << 31, N: 2, Inner: 1}, 2, "more than one cuFFT plan takes"},
		{fft.Lines{Outer: 1, N: 2, Inner: 1 << 31}, 2, "more than one cuFFT plan takes"},
	}
	for _, c := range cases {
		err := checkPlanSizes(c.l, c.n)
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v, n %d: %v", c.l, c.n, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%+v, n %d: error %v, want one saying %q", c.l, c.n, err, c.want)
		}
	}
}
