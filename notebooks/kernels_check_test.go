package notebooks_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var kernelDiffRE = regexp.MustCompile(`max \|kernel - built-ins\| = (\S+)\n`)

func init() {
	checks["12-user-kernels"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		contains(t, "output", text,
			"elementwise(x, y) = where(x > 0, sqrt(x) * y, -y) + log1p(abs(x))",
			"mean of the kernel = ",
			"i * 2 + 1 on int32: [3 5 7] (int32)",
			"column 7: unexpected end of expression: missing ',' in argument list",
			"column 1: unknown function sqrtt",
			"column 5: unknown name w (inputs: x, y;",
			"atan2 takes 2 arguments, got 1",
			"1 arguments for 2 inputs (x, y)",
			"running max per block of 2 columns: [[3 3 4 4] [5 9 2 6]] <nil>",
			"MapBlocks: block [0 0] of shape [2 2]: f returned 1 values, want 4",
			"kernel functions, sorted: true; hypot among them: true",
			"k.Inputs(): [x y]",
			"MapBlocksWith, one goroutine per block: [[3 3 4 4] [5 9 2 6]] <nil>",
			"block 1: sensor offline; errors.Is(blockErr, errOffline): true",
			"a failed block: MapBlocks: block [0 1]: sensor offline; errors.Is(err, errOffline): true")
		contains(t, "HTML", html, "float64", "(1000, 1000)")
		if m := kernelDiffRE.FindStringSubmatch(text); m == nil {
			t.Errorf("kernel vs built-ins missing:\n%s", text)
		} else if v, err := strconv.ParseFloat(m[1], 64); err != nil || v != 0 {
			t.Errorf("max |kernel - built-ins| = %q, want 0 (the same ops)", m[1])
		}
		if gpuPresent() {
			contains(t, "output", text, "GPU kernel: max |gpu - cpu built-ins| = ")
		} else {
			contains(t, "output", text, "GPU kernel skipped: ")
		}
		if strings.Contains(text, "panic") {
			t.Errorf("a cell panicked:\n%s", text)
		}
	}
}
