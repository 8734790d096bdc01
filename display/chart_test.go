package display

import (
	"encoding/xml"
	"math"
	"strings"
	"testing"
)

func wellFormed(t *testing.T, svg string) {
	t.Helper()
	d := xml.NewDecoder(strings.NewReader(svg))
	for {
		if _, err := d.Token(); err != nil {
			if err.Error() == "EOF" {
				return
			}
			t.Fatalf("SVG is not well-formed XML: %v\n%s", err, svg)
		}
	}
}

func TestBarChart(t *testing.T) {
	c := BarChart{Title: "seed <N>", Labels: []string{"One core", "One GPU"}, LogScale: true, Unit: "s",
		Series: []Series{{Name: "2019", Values: []float64{9540, 97}}, {Name: "today", Values: []float64{12.5, math.NaN()}}}}
	svg := c.SVG()
	wellFormed(t, svg)
	if strings.Count(svg, "<rect") != 3 {
		t.Fatalf("want 3 bars (one value missing), got %d", strings.Count(svg, "<rect"))
	}
	for _, w := range []string{"today: no value", "seed &lt;N&gt;", "1e+04 s", "One GPU"} {
		if !strings.Contains(svg, w) {
			t.Errorf("chart lacks %q", w)
		}
	}
	d, ok := Bundle(c)
	if !ok || d.MIME["image/svg+xml"] != svg {
		t.Fatal("a BarChart result must render as SVG")
	}
	if txt := d.MIME["text/plain"].(string); !strings.Contains(txt, "One core: 2019 9.54e+03 s today 12.5 s") || !strings.Contains(txt, "today -") {
		t.Fatalf("text form %q", txt)
	}
}

func TestLineChart(t *testing.T) {
	c := LineChart{Title: "scaling", X: []float64{1, 2, 4}, XLabel: "GPUs", YLabel: "speed-up",
		Series: []Series{{Name: "cluster", Values: []float64{1, 1.95, 3.7}}, {Name: "ideal", Values: []float64{1, 2, 4}}}}
	svg := c.SVG()
	wellFormed(t, svg)
	if strings.Count(svg, "<polyline") != 2 || strings.Count(svg, "<circle") != 6 {
		t.Fatalf("lines/points: %d %d", strings.Count(svg, "<polyline"), strings.Count(svg, "<circle"))
	}
	log := LineChart{X: []float64{1, 10, 100}, LogX: true, LogY: true, Series: []Series{{Name: "t", Values: []float64{5, 0, 0.05}}}}
	if n := strings.Count(log.SVG(), "<circle"); n != 2 {
		t.Fatalf("a zero on a log axis must be left out: %d points", n)
	}
}
