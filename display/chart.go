package display

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// Series is one named row of values in a chart.
type Series struct {
	Name   string
	Values []float64
}

// palette colours series in order.
var palette = []string{"#1f77b4", "#9e9e9e", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"}

// BarChart is a horizontal grouped bar chart: one group per label, one bar per series. Shown as
// a cell's result, or with Show, it renders as SVG. Values <= 0 or NaN draw no bar (a skipped
// measurement) and say so.
type BarChart struct {
	Title    string
	Labels   []string
	Series   []Series
	LogScale bool   // a log10 axis, for values spanning orders of magnitude
	Unit     string // appended to tick and bar values, e.g. "s"
	Width    int    // pixels (default 720)
}

// String summarizes the chart as text (what a terminal shows).
func (c BarChart) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "bar chart %q:", c.Title)
	for i, l := range c.Labels {
		fmt.Fprintf(&b, "\n  %s:", l)
		for _, s := range c.Series {
			if i < len(s.Values) && s.Values[i] > 0 {
				fmt.Fprintf(&b, " %s %s", s.Name, fmtValue(s.Values[i], c.Unit))
			} else {
				fmt.Fprintf(&b, " %s -", s.Name)
			}
		}
	}
	return b.String()
}

// SVG renders the chart.
func (c BarChart) SVG() string {
	width := float64(c.Width)
	if width <= 0 {
		width = 720
	}
	const left, barH, gap, top, right = 170.0, 14.0, 12.0, 40.0, 110.0
	nser := max(1, len(c.Series))
	groupH := float64(nser)*barH + gap
	height := top + float64(len(c.Labels))*groupH + 40
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, s := range c.Series {
		for _, v := range s.Values {
			if v > 0 && !math.IsInf(v, 0) {
				lo, hi = math.Min(lo, v), math.Max(hi, v)
			}
		}
	}
	if math.IsInf(lo, 1) {
		lo, hi = 1, 10
	}
	ax := newAxis(lo, hi, c.LogScale, left, width-right)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`, width, height)
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14" font-weight="bold">%s</text>`, left, html.EscapeString(c.Title))
	for _, t := range ax.ticks() {
		x := ax.pos(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#ddd"/>`, x, top-6, x, height-34)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle" fill="#555">%s</text>`, x, height-20, html.EscapeString(fmtValue(t, c.Unit)))
	}
	for i, label := range c.Labels {
		y := top + float64(i)*groupH
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end">%s</text>`, left-8, y+float64(nser)*barH/2+4, html.EscapeString(label))
		for j, s := range c.Series {
			yy := y + float64(j)*barH
			col := palette[j%len(palette)]
			v := math.NaN()
			if i < len(s.Values) {
				v = s.Values[i]
			}
			name := html.EscapeString(s.Name)
			if !(v > 0) || math.IsInf(v, 0) {
				fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" fill="#b00">%s: no value</text>`, left+4, yy+barH-3, name)
				continue
			}
			x := ax.pos(v)
			fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="%.1f" height="%.0f" fill="%s"><title>%s: %s</title></rect>`,
				left, yy, math.Max(x-left, 1), barH-1, col, name, html.EscapeString(fmtValue(v, c.Unit)))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" fill="#333">%s: %s</text>`, math.Max(x, left)+4, yy+barH-3, name, html.EscapeString(fmtValue(v, c.Unit)))
		}
	}
	b.WriteString(`</svg>`)
	return b.String()
}

// LineChart plots series against shared X values. Shown as a cell's result, it renders as SVG.
type LineChart struct {
	Title          string
	X              []float64
	Series         []Series
	XLabel, YLabel string
	LogX, LogY     bool
	Width, Height  int // pixels (default 640 x 320)
}

// String summarizes the chart as text (what a terminal shows).
func (c LineChart) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "line chart %q, %s vs %s:", c.Title, c.YLabel, c.XLabel)
	for _, s := range c.Series {
		fmt.Fprintf(&b, "\n  %s:", s.Name)
		for i, v := range s.Values {
			if i < len(c.X) {
				fmt.Fprintf(&b, " (%s, %s)", fmtValue(c.X[i], ""), fmtValue(v, ""))
			}
		}
	}
	return b.String()
}

// SVG renders the chart.
func (c LineChart) SVG() string {
	width, height := float64(c.Width), float64(c.Height)
	if width <= 0 {
		width = 640
	}
	if height <= 0 {
		height = 320
	}
	const left, right, top, bottom = 70.0, 150.0, 34.0, 46.0
	xlo, xhi := bounds(c.X, c.LogX)
	var ys []float64
	for _, s := range c.Series {
		ys = append(ys, s.Values...)
	}
	ylo, yhi := bounds(ys, c.LogY)
	if !c.LogY && ylo > 0 {
		ylo = 0
	}
	xa := newAxis(xlo, xhi, c.LogX, left, width-right)
	ya := newAxis(ylo, yhi, c.LogY, height-bottom, top)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="12">`, width, height)
	fmt.Fprintf(&b, `<text x="%.0f" y="18" font-size="14" font-weight="bold">%s</text>`, left, html.EscapeString(c.Title))
	for _, t := range xa.ticks() {
		x := xa.pos(t)
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.0f" x2="%.1f" y2="%.0f" stroke="#eee"/>`, x, top, x, height-bottom)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle" fill="#555">%s</text>`, x, height-bottom+16, fmtValue(t, ""))
	}
	for _, t := range ya.ticks() {
		y := ya.pos(t)
		fmt.Fprintf(&b, `<line x1="%.0f" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/>`, left, y, width-right, y)
		fmt.Fprintf(&b, `<text x="%.0f" y="%.1f" text-anchor="end" fill="#555">%s</text>`, left-6, y+4, fmtValue(t, ""))
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">%s</text>`, (left+width-right)/2, height-8, html.EscapeString(c.XLabel))
	fmt.Fprintf(&b, `<text x="14" y="%.0f" text-anchor="middle" transform="rotate(-90 14 %.0f)">%s</text>`, (top+height-bottom)/2, (top+height-bottom)/2, html.EscapeString(c.YLabel))
	for j, s := range c.Series {
		col := palette[j%len(palette)]
		var pts []string
		for i, v := range s.Values {
			if i >= len(c.X) || math.IsNaN(v) || (c.LogY && v <= 0) || (c.LogX && c.X[i] <= 0) {
				continue
			}
			x, y := xa.pos(c.X[i]), ya.pos(v)
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s at %s</title></circle>`, x, y, col, html.EscapeString(s.Name), fmtValue(v, ""), fmtValue(c.X[i], ""))
		}
		if len(pts) > 1 {
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`, strings.Join(pts, " "), col)
		}
		ly := top + 10 + float64(j)*18
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="12" height="3" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`, width-right+12, ly, col, width-right+30, ly+5, html.EscapeString(s.Name))
	}
	b.WriteString(`</svg>`)
	return b.String()
}

func bounds(vs []float64, log bool) (float64, float64) {
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) || (log && v <= 0) {
			continue
		}
		lo, hi = math.Min(lo, v), math.Max(hi, v)
	}
	if math.IsInf(lo, 1) {
		return 1, 10
	}
	if lo == hi {
		if log {
			return lo / 2, hi * 2
		}
		return lo - 1, hi + 1
	}
	return lo, hi
}

// axis maps values to pixels, linearly or by log10.
type axis struct {
	lo, hi float64
	log    bool
	p0, p1 float64
}

func newAxis(lo, hi float64, log bool, p0, p1 float64) axis {
	if log {
		lo = math.Pow(10, math.Floor(math.Log10(lo)))
		hi = math.Pow(10, math.Ceil(math.Log10(hi)))
		if lo == hi {
			hi = lo * 10
		}
	} else {
		step := niceStep((hi - math.Min(lo, 0)) / 5)
		hi = math.Ceil(hi/step) * step
		if lo > 0 {
			lo = 0
		} else {
			lo = math.Floor(lo/step) * step
		}
	}
	return axis{lo: lo, hi: hi, log: log, p0: p0, p1: p1}
}

func (a axis) pos(v float64) float64 {
	f := (v - a.lo) / (a.hi - a.lo)
	if a.log {
		f = (math.Log10(v) - math.Log10(a.lo)) / (math.Log10(a.hi) - math.Log10(a.lo))
	}
	return a.p0 + f*(a.p1-a.p0)
}

func (a axis) ticks() []float64 {
	var out []float64
	if a.log {
		for v := a.lo; v <= a.hi*1.0001; v *= 10 {
			out = append(out, v)
		}
		return out
	}
	step := niceStep((a.hi - a.lo) / 5)
	for v := a.lo; v <= a.hi+step/1e6; v += step {
		out = append(out, v)
	}
	return out
}

func niceStep(raw float64) float64 {
	if raw <= 0 || math.IsNaN(raw) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if raw <= m*p {
			return m * p
		}
	}
	return 10 * p
}

func fmtValue(v float64, unit string) string {
	s := fmt.Sprintf("%.3g", v)
	if unit != "" {
		s += " " + unit
	}
	return s
}
