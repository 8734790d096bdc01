package notebooks_test

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// roundTripRE matches the two FFT round-trip errors; lines between them (the progress line
// of a compute that took long on a busy machine) are skipped.
var roundTripRE = regexp.MustCompile(`max \|irfft\(rfft\(x\)\) - x\| = (\S+)\n(?:[^\n]*\n)*?max \|fftn\(x\) - fft\(fft\(x, 0\), 1\)\| = (\S+)`)

// moreRE matches the errors of the last section's inverses and factorizations.
var moreRE = regexp.MustCompile(`(?m)^(IFFT\(FFT\(x\)\)|IFFTN\(FFTN\(x\)\)|IRFFTN\(RFFTN\(x\)\) over axes 0, 1|HFFT\(IHFFT\(x\), n=64\)|IFFTShift\(FFTShift\(f\)\)|Parseval with FFTNorm\(ortho\): relative difference|Eigh: max \|m v - v diag\(w\)\| =|Pinv\(tall\) @ tall - I:|QR: max \|Q R - A\| = (?:\S+), max \|Q\^T Q - I\| =|TensordotAxes\(a, b, \[1\], \[0\]\) - a.Dot\(b\):):? (\S+)$`)

var qrRE = regexp.MustCompile(`QR: max \|Q R - A\| = (\S+),`)

var einsumRE = regexp.MustCompile(`max \|einsum - matmul\| = (\S+)`)

func init() {
	checks["11-spectra-and-linalg"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		html := joined(cells, func(c cellOutput) string { return c.html })
		contains(t, "output", text,
			"peaks at 50 Hz and 120 Hz",
			"FFTShift(FFTFreq(8, 1)): [-0.5 -0.375 -0.25 -0.125 0 0.125 0.25 0.375]",
			"Diagonal(sq, 1) = [ 1.  6. 11.]", "Trace(sq, 0) = 30\n",
			"Cross = [0. 0. 1.]",
			"m @ Solve(m, rhs) = [1. 2. 3.]", "Slogdet sign = 1\n", "Eigvalsh(m) = [1.26794919 3.         4.73205081]",
			"MatrixRank(Outer(rhs, rhs)) = 1\n", "Lstsq(tall, y) = [0.83333333 1.5       ]", "Inv of a singular matrix: compute: ", "inv: singular matrix", "VectorNorm(2) = 5\n", "MatrixNorm(inf) = 54\n", "Tensordot(sq, sq, 2) = 1240\n",
			"Histogram(0..9, 5 bins over [0, 10]) = [2 2 2 2 2]", "its edges = [ 0.  2.  4.  6.  8. 10.]",
			"HistogramEdges(0..9, [0 1 5 10]) = [1 4 5]", "Bincount([0 1 1 3 1]) = [1 3 0 1]",
			"Bincount weighted = [0.5  2.25 0.   2.   0.   0.  ]")
		contains(t, "HTML", html, "<svg", "float64")
		if strings.Contains(text, "error:") {
			t.Errorf("a function failed:\n%s", text)
		}
		small := func(what, s string) {
			v, err := strconv.ParseFloat(s, 64)
			if err != nil || v > 1e-9 {
				t.Errorf("%s = %q, want below 1e-9", what, s)
			}
		}
		if m := roundTripRE.FindStringSubmatch(text); m == nil {
			t.Errorf("round trips missing:\n%s", text)
		} else {
			small("irfft(rfft(x)) error", m[1])
			small("fftn vs fft twice", m[2])
		}
		if ms := moreRE.FindAllStringSubmatch(text, -1); len(ms) != 10 {
			t.Errorf("%d of the 10 inverse and factorization checks ran:\n%s", len(ms), text)
		} else {
			for _, m := range ms {
				small(m[1], m[2])
			}
		}
		if m := qrRE.FindStringSubmatch(text); m == nil {
			t.Errorf("no QR residual:\n%s", text)
		} else {
			small("QR residual", m[1])
		}
		contains(t, "output", text, "Eigh eigenvalues: [1.26794919 3.         4.73205081]",
			"sq.Diagonal(-1): [ 4.  9. 14.]  sq.Trace(1): 18\n")
		if m := einsumRE.FindStringSubmatch(text); m == nil {
			t.Errorf("einsum vs matmul missing:\n%s", text)
		} else {
			small("einsum vs matmul", m[1])
		}
		if !strings.Contains(text, "GPU spectrum skipped:") && !strings.Contains(text, "GPU spectrum: max |gpu - cpu| = ") {
			t.Errorf("the GPU step neither ran nor said it was skipped:\n%s", text)
		}
	}
}
