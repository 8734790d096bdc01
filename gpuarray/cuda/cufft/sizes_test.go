package cufft

import (
	"errors"
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

// TestFourStepReason: the planning decision between one cuFFT plan and the four steps (no GPU
// needed). A line that one plan takes, with a work area that fits, keeps its one plan (the
// default does not change); several lines or a line too short to split keep it too; the four
// steps are taken for a line longer than a plan takes (without planning it), one that cuFFT
// cannot plan, or one whose work area does not fit, and when forced; GPUNOTES_CUFFT_FOURSTEP=0
// never takes them.
func TestFourStepReason(t *testing.T) {
	fits := func() (uint64, error) { return 1 << 20, nil }
	big := func() (uint64, error) { return 1 << 40, nil }
	fails := func() (uint64, error) { return 0, errors.New("cufftMakePlanMany: CUFFT_ALLOC_FAILED (2)") }
	never := func() (uint64, error) { t.Fatal("planned a line whose decision needs no plan"); return 0, nil }
	line := func(n int) fft.Lines { return fft.Lines{Outer: 1, N: n, Inner: 1} }
	for _, c := range []struct {
		what    string
		mode    string
		l       fft.Lines
		onePlan func() (uint64, error)
		want    string // "" for one plan
	}{
		{"a line that fits", "", line(100_000_000), fits, ""},
		{"a line that fits, the variable 1", "1", line(100_000_000), never, "forced by GPUNOTES_CUFFT_FOURSTEP=1"},
		{"a line that fits, the variable 0", "0", line(100_000_000), never, ""},
		{"a line longer than a plan", "", line(1 << 31), never, "longer than one cuFFT plan takes"},
		{"a line longer than a plan, the variable 0", "0", line(1 << 31), never, ""},
		{"a work area that does not fit", "", line(1_000_000_000), big, "does not fit in the 1.1 GB"},
		{"a line cuFFT cannot plan", "", line(1_000_000_000), fails, "cannot plan it in one (cufftMakePlanMany: CUFFT_ALLOC_FAILED (2))"},
		{"several lines", "1", fft.Lines{Outer: 20000, N: 20000, Inner: 1}, never, ""},
		{"strided lines", "1", fft.Lines{Outer: 1, N: 20000, Inner: 3}, never, ""},
		{"a line too short", "1", line(3), never, ""},
	} {
		got := fourStepReason(c.mode, c.l, c.onePlan, func(uint64) uint64 { return 1<<30 + 1<<26 })
		if (c.want == "") != (got == "") || !strings.Contains(got, c.want) {
			t.Errorf("%s: %q, want %q", c.what, got, c.want)
		}
	}
}
