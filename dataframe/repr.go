package dataframe

import (
	"fmt"
	"html"
	"math"
	"strconv"
	"strings"
	"time"
)

const reprRows = 10

// cellText formats row i of h as pandas prints it.
func cellText(h *hostCol, i int) string {
	if !h.isValid(i) {
		if h.dt.IsFloat() {
			return "NaN"
		}
		if h.dt.IsDatetime() {
			return "NaT"
		}
		return "<NA>"
	}
	switch {
	case h.dt == String || h.dt == Category:
		return h.stringAt(i)
	case h.dt.IsDatetime():
		t := h.vals.Int64s()[i]
		per := h.dt.unitTicks()
		tm := time.Unix(t/per, (t%per)*(1e9/per)).UTC()
		if t%(per*86400) == 0 {
			return tm.Format("2006-01-02")
		}
		return tm.Format("2006-01-02 15:04:05.999999999")
	case h.dt.IsFloat():
		f := h.vals.Float(i)
		if math.IsNaN(f) {
			return "NaN"
		}
		return strconv.FormatFloat(f, 'g', 6, 64)
	case h.dt == Bool:
		if h.vals.Float(i) != 0 {
			return "True"
		}
		return "False"
	}
	return fmt.Sprint(h.vals.Elem(i))
}

// headRows returns the row indexes shown: all, or the first and last five.
func headRows(n int) (idx []int, cut bool) {
	if n <= reprRows {
		for i := 0; i < n; i++ {
			idx = append(idx, i)
		}
		return idx, false
	}
	for i := 0; i < reprRows/2; i++ {
		idx = append(idx, i)
	}
	for i := n - reprRows/2; i < n; i++ {
		idx = append(idx, i)
	}
	return idx, true
}

func (f *Frame) summary() string {
	rows := "?"
	if f.nrows >= 0 {
		rows = strconv.Itoa(f.nrows)
	}
	s := fmt.Sprintf("%s rows × %d columns, %d partitions", rows, len(f.fields), f.nparts)
	if f.done != nil {
		s += ", held on " + f.Where()
	} else {
		s += ", lazy"
	}
	return s
}

// String renders the frame as text: a computed frame's head and tail rows as pandas prints
// them, a lazy frame's columns and types (as dask prints an uncomputed frame).
func (f *Frame) String() string {
	if f.err != nil {
		return "dataframe error: " + f.err.Error()
	}
	var b strings.Builder
	if f.done == nil {
		fmt.Fprintf(&b, "Frame (lazy): %s\n", f.summary())
		for _, c := range f.fields {
			fmt.Fprintf(&b, "  %-20s %s\n", c.Name, c.DType)
		}
		if f.what != "" {
			fmt.Fprintf(&b, "last step: %s\n", f.what)
		}
		return b.String()
	}
	ht, err := hostOf(f.done)
	if err != nil {
		return "dataframe error: " + err.Error()
	}
	idx, cut := headRows(len(ht.rows))
	cells := make([][]string, len(ht.cols))
	width := make([]int, len(ht.cols))
	for j, c := range ht.cols {
		width[j] = len(c.name)
		for _, i := range idx {
			t := cellText(c, i)
			cells[j] = append(cells[j], t)
			width[j] = max(width[j], len([]rune(t)))
		}
	}
	iw := len(strconv.Itoa(max(0, len(ht.rows)-1)))
	fmt.Fprintf(&b, "%*s", iw, "")
	for j, c := range ht.cols {
		fmt.Fprintf(&b, "  %*s", width[j], c.name)
	}
	b.WriteByte('\n')
	for r, i := range idx {
		if cut && r == reprRows/2 {
			fmt.Fprintf(&b, "%*s", iw, "..")
			for j := range ht.cols {
				fmt.Fprintf(&b, "  %*s", width[j], "...")
			}
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%*d", iw, i)
		for j := range ht.cols {
			fmt.Fprintf(&b, "  %*s", width[j], cells[j][r])
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "\n[%s]\n", f.summary())
	return b.String()
}

// HTML renders the frame as pandas does in a notebook: a computed frame's head and tail, its
// dtypes, shape, partitions and where it is held; a lazy frame's columns and types.
func (f *Frame) HTML() string {
	if f.err != nil {
		return "<pre>dataframe error: " + html.EscapeString(f.err.Error()) + "</pre>"
	}
	var b strings.Builder
	b.WriteString(`<div class="gpunotes-frame"><table class="dataframe" border="1"><thead><tr style="text-align: right;"><th></th>`)
	for _, c := range f.fields {
		fmt.Fprintf(&b, "<th>%s</th>", html.EscapeString(c.Name))
	}
	b.WriteString("</tr><tr><th>dtype</th>")
	for _, c := range f.fields {
		fmt.Fprintf(&b, "<td><i>%s</i></td>", html.EscapeString(string(c.DType)))
	}
	b.WriteString("</tr></thead><tbody>")
	if f.done != nil {
		ht, err := hostOf(f.done)
		if err != nil {
			return "<pre>dataframe error: " + html.EscapeString(err.Error()) + "</pre>"
		}
		idx, cut := headRows(len(ht.rows))
		for r, i := range idx {
			if cut && r == reprRows/2 {
				b.WriteString("<tr><th>...</th>")
				for range ht.cols {
					b.WriteString("<td>...</td>")
				}
				b.WriteString("</tr>")
			}
			fmt.Fprintf(&b, "<tr><th>%d</th>", i)
			for _, c := range ht.cols {
				fmt.Fprintf(&b, "<td>%s</td>", html.EscapeString(cellText(c, i)))
			}
			b.WriteString("</tr>")
		}
	} else {
		b.WriteString("<tr><th>...</th>")
		for range f.fields {
			b.WriteString("<td>...</td>")
		}
		b.WriteString("</tr>")
	}
	fmt.Fprintf(&b, "</tbody></table><p>%s</p>", html.EscapeString(f.summary()))
	if p := f.Path(); p != "" {
		fmt.Fprintf(&b, "<p><small>path: %s</small></p>", html.EscapeString(p))
	}
	b.WriteString("</div>")
	return b.String()
}
