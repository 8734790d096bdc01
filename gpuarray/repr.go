package gpuarray

import (
	"fmt"
	"html"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// String returns a short description of a lazy array, and a computed array's values as
// NumPy prints them: a grid of rows and columns, summarized around "..." when large.
func (a *Array) String() string {
	if err := a.Err(); err != nil {
		return "gpuarray.Array<error: " + err.Error() + ">"
	}
	n := a.n
	if g, ok := n.Buf.(*gpuChunks); ok && g.label != "" && expr.Size(n.Shape) <= printCopyLimit {
		// A result Compute left on a GPU: printing asks for its values, copy them.
		_, _ = n.Values()
	}
	if b, ok := n.Buf.(offHost); ok && !b.copied() {
		return fmt.Sprintf("gpuarray.Array<shape=%s, dtype=%v, chunksize=%s, chunks=%d, %s>",
			expr.ShapeString(n.Shape), n.DType, expr.ShapeString(chunkSize(n.Chunks)), expr.NumChunks(n.Chunks), b.state())
	}
	if n.Kind == expr.KData {
		if len(n.Shape) == 0 {
			return elemString(n.Data, 0, "%v")
		}
		return formatGrid(hostValues(n), n.Shape)
	}
	return fmt.Sprintf("gpuarray.Array<shape=%s, dtype=%v, chunksize=%s, chunks=%d, lazy>",
		expr.ShapeString(n.Shape), n.DType, expr.ShapeString(chunkSize(n.Chunks)), expr.NumChunks(n.Chunks))
}

// printCopyLimit is the most elements of a GPU-held Compute result that String copies to the
// host to print them; larger ones print where they are.
const printCopyLimit = 1 << 20

// hostValues returns a data node's values where they are in host memory already (nil for
// values a GPU holds that were never copied, or were released).
func hostValues(n *expr.Node) dtype.Slice {
	if b, ok := n.Buf.(offHost); ok && !b.copied() {
		return dtype.Slice{}
	}
	v, _ := n.Values()
	return v
}

// elemString formats element i of v: floats and complex numbers with verb (as float64 values,
// so float32 ones print as before), integers in full, bools as true or false.
func elemString(v dtype.Slice, i int, verb string) string {
	dt := v.DType()
	switch {
	case dt == dtype.Bool || dt.IsInteger():
		return fmt.Sprint(v.Elem(i))
	case dt.IsComplex():
		return fmt.Sprintf(verb, dtype.Convert(v.Slice(i, i+1), dtype.Complex128).Complex128s()[0])
	}
	return fmt.Sprintf(verb, v.Float(i))
}

// chunkSize is the largest chunk along each axis.
func chunkSize(chunks [][]int) []int {
	s := make([]int, len(chunks))
	for i, cs := range chunks {
		for _, c := range cs {
			s[i] = max(s[i], c)
			if c == expr.Unknown {
				s[i] = expr.Unknown
				break
			}
		}
	}
	return s
}

func bytesString(b int64) string {
	units := []string{"B", "kB", "MB", "GB", "TB", "PB"}
	f := float64(b)
	u := 0
	for f >= 1000 && u < len(units)-1 {
		f /= 1000
		u++
	}
	if u == 0 {
		return fmt.Sprintf("%d B", b)
	}
	return fmt.Sprintf("%.2f %s", f, units[u])
}

// HTML returns a table of the array's shape, dtype, chunks and bytes, with an SVG drawing of
// its chunk grid, as dask shows arrays in notebooks.
func (a *Array) HTML() string {
	if err := a.Err(); err != nil {
		return "<pre>gpuarray error: " + html.EscapeString(err.Error()) + "</pre>"
	}
	n := a.n
	cs := chunkSize(n.Chunks)
	esz := int64(n.DType.Size())
	var b strings.Builder
	b.WriteString(`<table><tr><td><table style="border-collapse:collapse">`)
	b.WriteString(`<thead><tr><td></td><th>Array</th><th>Chunk</th></tr></thead><tbody>`)
	row := func(k, v1, v2 string) {
		fmt.Fprintf(&b, "<tr><th>%s</th><td>%s</td><td>%s</td></tr>", k, html.EscapeString(v1), html.EscapeString(v2))
	}
	if expr.HasUnknown(n.Shape) {
		row("Bytes", "unknown (a boolean mask)", "unknown")
	} else {
		row("Bytes", bytesString(expr.Size(n.Shape)*esz), bytesString(expr.Size(cs)*esz))
	}
	row("Shape", expr.ShapeString(n.Shape), expr.ShapeString(cs))
	row("Count", fmt.Sprintf("%d chunks", expr.NumChunks(n.Chunks)), "")
	row("Type", n.DType.String(), "")
	state, grid := "lazy", false
	var places []placeBytes
	if b, ok := n.Buf.(offHost); ok {
		places = b.placement()
		if !b.copied() {
			state = "computed, " + b.state() + " (ToSlice or Compute copies it to the host)"
		} else {
			state = "computed, " + b.state() + ", copied to the host"
			grid = true
		}
	} else if n.Kind == expr.KData {
		state, grid = "computed", true
	}
	row("State", state, "")
	for _, p := range places {
		row("Held on "+p.Where, bytesString(p.Bytes), "")
	}
	if a.path != "" {
		row("Computed by", a.path, "")
	}
	b.WriteString(`</tbody></table></td><td>`)
	b.WriteString(gridSVG(n.Shape, n.Chunks))
	b.WriteString(`</td></tr></table>`)
	if grid {
		b.WriteString(`<pre style="margin:4px 0 0 0">`)
		b.WriteString(html.EscapeString(formatGrid(hostValues(n), n.Shape)))
		b.WriteString(`</pre>`)
	}
	return b.String()
}

// gridSVG draws the chunk grid of the last two axes (one axis: a bar), at most 100 lines per
// axis.
func gridSVG(shape []int, chunks [][]int) string {
	const size = 160.0
	var rows, cols []int
	switch len(shape) {
	case 0:
		rows, cols = []int{1}, []int{1}
	case 1:
		rows, cols = []int{1}, chunks[0]
	default:
		rows, cols = chunks[len(chunks)-2], chunks[len(chunks)-1]
	}
	h, w := sum(rows), sum(cols)
	if h == 0 || w == 0 {
		return ""
	}
	W, H := size, size*float64(h)/float64(w)
	if H > size {
		W, H = size*float64(w)/float64(h), size
	}
	if len(shape) == 1 {
		H = 25
	}
	W, H = max(W, 20), max(H, 20)
	var b strings.Builder
	fmt.Fprintf(&b, `<svg width="%.0f" height="%.0f" style="stroke:rgb(0,0,0);stroke-width:1">`, W+20, H+30)
	fmt.Fprintf(&b, `<rect x="10" y="10" width="%.1f" height="%.1f" style="fill:#ECB172A0;stroke-width:2"/>`, W, H)
	lines := func(cs []int, total int, horizontal bool) {
		step := max(1, len(cs)/100)
		pos := 0
		for i, c := range cs[:len(cs)-1] {
			pos += c
			if i%step != 0 {
				continue
			}
			if horizontal {
				y := 10 + H*float64(pos)/float64(total)
				fmt.Fprintf(&b, `<line x1="10" y1="%.1f" x2="%.1f" y2="%.1f"/>`, y, 10+W, y)
			} else {
				x := 10 + W*float64(pos)/float64(total)
				fmt.Fprintf(&b, `<line x1="%.1f" y1="10" x2="%.1f" y2="%.1f"/>`, x, x, 10+H)
			}
		}
	}
	lines(rows, h, true)
	lines(cols, w, false)
	fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-size="12" text-anchor="middle" style="stroke-width:0">%d</text>`, 10+W/2, H+25, w)
	b.WriteString(`</svg>`)
	return b.String()
}

func sum(v []int) int {
	s := 0
	for _, x := range v {
		s += x
	}
	return s
}
