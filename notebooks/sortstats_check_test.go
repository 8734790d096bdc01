package notebooks_test

import (
	"math"
	"regexp"
	"strings"
	"testing"
)

var exactRE = regexp.MustCompile(`(?m)^(median of Exponential\(2\)|mean of Chisquare\(3\)): (\S+) \(exact (\S+)\)$`)

func init() {
	checks["14-sort-search-stats"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		// The small inputs' results, worked out by hand and as NumPy gives them.
		contains(t, "output", text,
			"Sort: float64 [ 1.  1.  2.  3.  4.  5. nan]",
			"Sort, Descending: float64 [nan  5.  4.  3.  2.  1.  1.]",
			"Argsort: int64 [1 5 3 0 6 4 2]",
			"Argsort, Descending: int64 [2 4 6 0 3 1 5]",
			"TopK(3): float64 [nan  5.  4.]",
			"ArgTopK(-2): int64 [1 5]",
			"Searchsorted left: int64 [0 1 3 4]",
			"Searchsorted right: int64 [0 3 3 4]",
			"Nonzero rows: int64 [0 1 1]", "Nonzero columns: int64 [1 0 2]",
			"Argwhere: int64 [[0 1]\n [1 0]\n [1 2]]",
			"UniqueValues: int64 [1 2 3]", "UniqueCounts counts: int64 [2 1 3]",
			"UniqueInverse inverse: int64 [2 0 2 1 0 2]",
			"Take(values, inverse): int64 [3 1 3 2 1 3]",
			"UniqueAll first indices: int64 [1 3 0]", "UniqueAll counts: int64 [2 1 3]",
			"Min: float64 [ 1. nan nan]", "ArgMin: int64 [0 0 1]",
			"NanSum: float64 [ 4.  9. 12.]", "NanMean: float64 [2.  4.5 4. ]",
			"NanMin: float64 [1. 2. 3.]", "NanMax: float64 [4. 5. 8.]",
			"NanArgMin: int64 [0 0 0]", "NanArgMax: int64 [2 1 2]",
			"NanVar: float64 [1.   0.25 8.  ]", "NanStd: float64 [1.         0.5        2.82842712]",
			"NanVarDdof(1): float64 [ 2.   0.5 12. ]", "NanStdDdof(1): float64 [1.41421356 0.70710678 3.46410162]",
			"VarDdof(1): float64 1.6666666666666667", "StdDdof(1): float64 1.2909944487358056",
			"Prod: float64 24", "Any(x > 3): bool true", "All(x >= 1): bool true",
			"CountNonzero: int64 [1 2]",
			"Eq 2: bool [False  True False False]", "Ne 2: bool [ True False  True  True]",
			"Le 2: bool [ True  True False False]",
			"Maximum(x, 2.5): float64 [2.5 2.5 3.  4. ]", "Minimum(x, 2.5): float64 [1.  2.  2.5 2.5]",
			"CumulativeSum: float64 [ 1.  3.  6. 10.]",
			"CumulativeSum, include initial: float64 [ 0.  1.  3.  6. 10.]",
			"CumulativeProd: float64 [ 1.  2.  6. 24.]",
			"Diff(x*x, 1): float64 [3. 5. 7.]", "Diff(x*x, 2): float64 [2. 2.]",
			"Median axis 1: float64 [5. 5.]", "MedianAxes(0, 1): float64 5",
			"Quantile(0.25) axis 1: float64 [2.5 3.5]",
			"Percentile(90) axis 0: float64 [9.1 8.3 5.7 6.7]",
			"Percentiles(10, 50) of all: float64 [1.7 5. ]",
			"negative steps in the sorted draws: 0",
		)
		// At N = 200000 the standard errors are about 0.005; allow six of them.
		ms := exactRE.FindAllStringSubmatch(text, -1)
		if len(ms) != 2 {
			t.Fatalf("%d estimates, want 2:\n%s", len(ms), text)
		}
		for _, m := range ms {
			got, want := num(t, m[2]), num(t, m[3])
			if math.Abs(got-want) > 0.03 {
				t.Errorf("%s: %v, exact %v", m[1], got, want)
			}
		}
		if strings.Contains(text, "error:") {
			t.Errorf("a function failed:\n%s", text)
		}
	}
}
