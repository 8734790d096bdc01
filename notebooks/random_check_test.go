package notebooks_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var betaTinyRE = regexp.MustCompile(`Beta\(0\.001, 0\.001\): (\d+) NaN in 1000000 values; share below 1e-300 (\S+) \(exact (\S+)\)`)

var randMeanRE = regexp.MustCompile(`(?m)^(.+?)\s+mean\s+(\S+) \(exact\s+(\S+)\)\s+variance\s+(\S+) \(exact\s+(\S+)\)$`)

func init() {
	checks["13-random"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		svg := joined(cells, func(c cellOutput) string { return c.svg })
		contains(t, "output", text,
			"one chunk and 7 x 13 chunks give the same values: true",
			"row 299, every 100th column, computed alone: true",
			"Permutation(10): [",
			"Choice: 4 elements without replacement from 3",
			"KeepDims().Mean(0) has shape [1 200]",
			"2.5%, 50%, 97.5% quantiles of 200000 normals: [-1.9",
		)
		contains(t, "HTML", html, "<th>distribution</th>", "Binomial(50, 0.3)")
		// Beta(0.001, 0.001): no NaN, and the share below 1e-300 within 6 standard errors
		// (0.0026 at 10^6 values) of the exact one.
		if m := betaTinyRE.FindStringSubmatch(text); m == nil {
			t.Errorf("no Beta(0.001, 0.001) line in:\n%s", text)
		} else {
			got, _ := strconv.ParseFloat(m[2], 64)
			want, _ := strconv.ParseFloat(m[3], 64)
			if m[1] != "0" || !(want > 0.2 && want < 0.3) || !(got > want-0.0026 && got < want+0.0026) {
				t.Errorf("Beta(0.001, 0.001): %s NaN, share below 1e-300 %s (exact %s)", m[1], m[2], m[3])
			}
		}
		contains(t, "SVG", svg, "Poisson(4)")
		// Every sample mean within 1% of the exact one (0.02 for the t's mean of 0), at N=200000.
		ms := randMeanRE.FindAllStringSubmatch(text, -1)
		if len(ms) != 6 {
			t.Fatalf("%d mean rows, want 6:\n%s", len(ms), text)
		}
		for _, m := range ms {
			got, _ := strconv.ParseFloat(m[2], 64)
			want, _ := strconv.ParseFloat(m[3], 64)
			if d := got - want; d > 0.01*want+0.02 || -d > 0.01*want+0.02 {
				t.Errorf("%s: mean %v, exact %v", m[1], got, want)
			}
		}
		if gpuPresent() {
			contains(t, "output", text, "GPU draws: 1000000 of 1000000 gammas equal")
		} else {
			contains(t, "output", text, "GPU draws skipped: ")
		}
		if strings.Contains(text, "panic") {
			t.Errorf("a cell panicked:\n%s", text)
		}
	}
}
