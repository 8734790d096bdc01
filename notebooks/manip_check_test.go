package notebooks_test

import (
	"regexp"
	"strings"
	"testing"
)

var meansRE = regexp.MustCompile(`above 1: (\S+) \(masked\), (\S+) \(where / count\)`)

var sumsRE = regexp.MustCompile(`sum of big (\S+), through a reshape (\S+), through a concat of its halves (\S+)`)

func init() {
	checks["08-reshape-and-index"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		contains(t, "output", text,
			"[[ 0.  1.  2.  3.]\n [ 4.  5.  6.  7.]\n [ 8.  9. 10. 11.]]",
			"Eye(3, 4, 1): shape [3 4]", "Linspace(0, 1, 1): shape [1], chunks [[1]]\n[0.]",
			"Concat(a, b): shape [4 3], chunks [[2 2] [3]]", "Tile(a, 2, 2): shape [4 6]",
			"Rechunk(-1, Chunk): [[2000] [500 500 500 500]]",
			"x.Mask(x > 4) before computing: gpuarray.Array<shape=(nan,)", "call ComputeChunkSizes",
			"x.Mask(x > 4): shape [7], chunks [[7]]\n[ 5.  6.  7.  8.  9. 10. 11.]", "after ComputeChunkSizes: [7] [[7]]")
		contains(t, "HTML", html, "<svg", "float64", "<pre")
		if strings.Contains(text, "error:") {
			t.Errorf("a function failed:\n%s", text)
		}
		if m := meansRE.FindStringSubmatch(text); m == nil || m[1] != m[2] {
			t.Errorf("masked mean differs from where/count: %v", m)
		}
		// The numbers of a random array are the same through a reshape and a concat.
		m := sumsRE.FindStringSubmatch(text)
		if m == nil || m[1] != m[2] || m[1] != m[3] {
			t.Errorf("sums differ or are missing: %v\n%s", m, text)
		}
	}
}
