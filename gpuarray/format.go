package gpuarray

import (
	"math"
	"strconv"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// NumPy's printing of arrays (numpy.array2string with its defaults): every element in one
// format (positional, or scientific when magnitudes span more than 1e3 or reach 1e8 or fall
// below 1e-4), at most 8 fractional digits and as few as tell the values apart, columns
// aligned, rows of 75 characters at most, and arrays over 1000 elements summarized by their
// first and last 3 items on each axis around "...".

const (
	printThreshold = 1000
	printEdge      = 3
	printWidth     = 75
	printPrecision = 8
)

// formatGrid formats row-major values of shape as NumPy's str(array) does (complex numbers
// as Go prints them, aligned).
func formatGrid(v dtype.Slice, shape []int) string {
	size := 1
	for _, d := range shape {
		size *= d
	}
	if size == 0 || v.Len() < size {
		return "[]"
	}
	summary := size > printThreshold
	strides := make([]int, len(shape))
	st := 1
	for d := len(shape) - 1; d >= 0; d-- {
		strides[d] = st
		st *= shape[d]
	}
	// The shown elements decide the format.
	var shown []int
	var collect func(d, base int)
	collect = func(d, base int) {
		if d == len(shape) {
			shown = append(shown, base)
			return
		}
		for _, i := range shownIndices(shape[d], summary) {
			if i >= 0 {
				collect(d+1, base+i*strides[d])
			}
		}
	}
	collect(0, 0)
	format := elemFormat(v, shown)
	if len(shape) == 0 {
		return strings.TrimSpace(format(0))
	}
	var b strings.Builder
	var rec func(d, base int, indent string)
	rec = func(d, base int, indent string) {
		b.WriteByte('[')
		n := shape[d]
		idx := shownIndices(n, summary)
		if d == len(shape)-1 {
			line := len(indent) + 1
			for j, i := range idx {
				var w string
				if i < 0 {
					w = "..."
				} else {
					w = format(base + i*strides[d])
				}
				if j > 0 {
					if line+1+len(w)+(len(shape)-d) > printWidth {
						b.WriteString("\n")
						b.WriteString(indent)
						b.WriteByte(' ')
						line = len(indent) + 1
					} else {
						b.WriteByte(' ')
						line++
					}
				}
				b.WriteString(w)
				line += len(w)
			}
			b.WriteByte(']')
			return
		}
		sep := strings.Repeat("\n", len(shape)-d-1) + indent + " "
		for j, i := range idx {
			if j > 0 {
				b.WriteString(sep)
			}
			if i < 0 {
				b.WriteString("...")
				continue
			}
			rec(d+1, base+i*strides[d], indent+" ")
		}
		b.WriteByte(']')
	}
	rec(0, 0, "")
	lines := strings.Split(b.String(), "\n")
	for i := range lines[:len(lines)-1] {
		lines[i] = strings.TrimRight(lines[i], " ")
	}
	return strings.Join(lines, "\n")
}

// elemFormat returns the formatter of v's elements that fits the shown ones (flat indices).
func elemFormat(v dtype.Slice, shown []int) func(i int) string {
	dt := v.DType()
	switch {
	case dt == dtype.Float64 || dt == dtype.Float32:
		vals := make([]float64, len(shown))
		for j, i := range shown {
			vals[j] = v.Float(i)
		}
		ff := newFloatFormat(vals, dt == dtype.Float32)
		return func(i int) string { return ff.format(v.Float(i)) }
	case dt == dtype.Bool:
		return func(i int) string {
			if v.Float(i) != 0 {
				return " True"
			}
			return "False"
		}
	}
	// Integers and complex numbers: right-aligned to the widest shown one.
	w := 0
	for _, i := range shown {
		w = max(w, len(elemString(v, i, "%v")))
	}
	return func(i int) string {
		s := elemString(v, i, "%v")
		return strings.Repeat(" ", max(0, w-len(s))) + s
	}
}

// shownIndices lists the indices of an axis of length n that are printed; -1 stands for "...".
func shownIndices(n int, summary bool) []int {
	var out []int
	if summary && n > 2*printEdge {
		for i := 0; i < printEdge; i++ {
			out = append(out, i)
		}
		out = append(out, -1)
		for i := n - printEdge; i < n; i++ {
			out = append(out, i)
		}
		return out
	}
	for i := 0; i < n; i++ {
		out = append(out, i)
	}
	return out
}

// floatFormat is NumPy's FloatingFormat in its default mode ("maxprec").
type floatFormat struct {
	exp               bool
	bits              int // 32 or 64: shortest digits for the dtype
	padLeft, padRight int
	prec              int // scientific: fractional digits of every element
	expSize           int // scientific: digits of the exponent
}

func newFloatFormat(vals []float64, f32 bool) *floatFormat {
	ff := &floatFormat{bits: 64}
	if f32 {
		ff.bits = 32
	}
	var finite []float64
	maxv, minv := 0.0, math.Inf(1)
	hasNonFinite, negInf := false, false
	for _, x := range vals {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			hasNonFinite = true
			negInf = negInf || math.IsInf(x, -1)
			continue
		}
		finite = append(finite, x)
		if a := math.Abs(x); a != 0 {
			maxv = max(maxv, a)
			minv = min(minv, a)
		}
	}
	if maxv > 0 && (maxv >= 1e8 || minv < 0.0001 || maxv/minv > 1000) {
		ff.exp = true
	}
	if ff.exp {
		for _, x := range finite {
			ip, fp, ep := splitSci(ff.shortest(x, 'e'))
			ff.padLeft = max(ff.padLeft, len(ip))
			ff.prec = max(ff.prec, len(fp))
			ff.expSize = max(ff.expSize, len(ep))
		}
		ff.padRight = ff.expSize + 2 + ff.prec
	} else {
		for _, x := range finite {
			s := ff.shortest(x, 'f')
			ip, fp, _ := strings.Cut(s, ".")
			ff.padLeft = max(ff.padLeft, len(ip))
			ff.padRight = max(ff.padRight, len(fp))
		}
	}
	if hasNonFinite {
		off := ff.padRight + 1
		inf := 3
		if negInf {
			inf = 4
		}
		ff.padLeft = max(ff.padLeft, 3-off, inf-off)
	}
	return ff
}

// shortest returns x with the fewest digits that identify it, at most printPrecision of them
// after the point ('f') or in the mantissa's fraction ('e'), trailing zeros dropped.
func (ff *floatFormat) shortest(x float64, mode byte) string {
	s := strconv.FormatFloat(x, mode, -1, ff.bits)
	mant, exp, _ := strings.Cut(s, "e")
	if _, frac, ok := strings.Cut(mant, "."); ok && len(frac) > printPrecision {
		s = strconv.FormatFloat(x, mode, printPrecision, ff.bits)
		mant, exp, _ = strings.Cut(s, "e")
		mant = strings.TrimRight(mant, "0")
	}
	if !strings.Contains(mant, ".") {
		mant += "."
	}
	if mode == 'e' {
		return mant + "e" + exp
	}
	return mant
}

// splitSci splits "1.25e+05" into "1", "25" and "05".
func splitSci(s string) (ip, fp, ep string) {
	mant, exp, _ := strings.Cut(s, "e")
	ip, fp, _ = strings.Cut(mant, ".")
	return ip, fp, strings.TrimLeft(exp, "+-")
}

func (ff *floatFormat) format(x float64) string {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		s := "nan"
		if math.IsInf(x, 1) {
			s = "inf"
		} else if math.IsInf(x, -1) {
			s = "-inf"
		}
		return strings.Repeat(" ", max(0, ff.padLeft+ff.padRight+1-len(s))) + s
	}
	var ip, fp string
	if ff.exp {
		s := strconv.FormatFloat(x, 'e', ff.prec, ff.bits)
		var ep string
		ip, fp, ep = splitSci(s)
		sign := "+"
		if strings.Contains(s, "e-") {
			sign = "-"
		}
		ep = strings.Repeat("0", max(0, ff.expSize-len(ep))) + ep
		return strings.Repeat(" ", max(0, ff.padLeft-len(ip))) + ip + "." + fp + "e" + sign + ep
	}
	ip, fp, _ = strings.Cut(ff.shortest(x, 'f'), ".")
	return strings.Repeat(" ", max(0, ff.padLeft-len(ip))) + ip + "." + fp + strings.Repeat(" ", max(0, ff.padRight-len(fp)))
}
