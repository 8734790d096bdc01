package notebooks_test

import (
	"strings"
	"testing"
)

func init() {
	checks["18-numpy-habits"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		// shape|values as NumPy gives them for x = arange(12).reshape(3, 4), v = [3, 1, 2, 5, 4]
		// and s = [1, 2, 3, 4, 5] (worked out by hand; interp/preload's one-liner test checks
		// every line against the venv's NumPy).
		contains(t, "output", text,
			"12|0,1,3,6,10,15,21,28,36,45,55,66\n", // x.cumsum()
			"3,4|0,1,3,6,4,9,15,22,8,17,27,38\n",   // x.cumsum(axis=1)
			"5|1,2,0,4,3\n",                        // v.argsort()
			"4,3|0,4,8,1,5,9,2,6,10,3,7,11\n",      // x.swapaxes(0, 1)
			"12|0,1,2,3,4,5,6,7,8,9,10,11\n",       // x.flatten()
			"2|2,2\n",                              // s.searchsorted([2.5, 3])
		)
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "error:") {
				t.Errorf("a one-liner failed: %s", line)
			}
		}
	}
}
