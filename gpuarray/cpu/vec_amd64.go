package cpu

import (
	"os"
	"time"

	"golang.org/x/sys/cpu"
)

//go:noescape
func divAVX(dst, a, b []float64)

//go:noescape
func absAVX(dst, a []float64)

//go:noescape
func welfordAVX(n, m, m2, v []float64, c, inv float64)

// useAVX reports whether the AVX loops run: the CPU and OS support AVX2 (absAVX broadcasts
// from a register, an AVX2 form), and on this machine they beat the Go loops (some virtual
// machines run vector code slowly, see rng's AVX2 note), timed once at start on a few blocks
// (tens of microseconds). GPUNOTES_NOAVX=1 turns them off.
// Both compute the same IEEE operations in the same order, so results never depend on it.
var useAVX = cpu.X86.HasAVX && cpu.X86.HasAVX2 && os.Getenv("GPUNOTES_NOAVX") != "1" && avxFaster()

func avxFaster() bool {
	a, b, d := make([]float64, BlockLen), make([]float64, BlockLen), make([]float64, BlockLen)
	for i := range a {
		a[i], b[i] = float64(i+1), float64(2*i+3)
	}
	best := func(f func(dst, a, b []float64)) time.Duration {
		t := time.Duration(1 << 62)
		for r := 0; r < 3; r++ {
			t0 := time.Now()
			for i := 0; i < 16; i++ {
				f(d, a, b)
			}
			t = min(t, time.Since(t0))
		}
		return t
	}
	return best(divAVX) < best(divGo)
}

// div sets dst[i] = a[i] / b[i] for i < len(dst).
func div(dst, a, b []float64) {
	if useAVX {
		divAVX(dst, a[:len(dst)], b[:len(dst)])
		return
	}
	divGo(dst, a, b)
}

// abs sets dst[i] = |a[i]| for i < len(dst).
func abs(dst, a []float64) {
	if useAVX {
		absAVX(dst, a[:len(dst)])
		return
	}
	absGo(dst, a)
}

// welford folds v[i] into the running count, mean and squared deviations of partial i, all
// of whose counts are c-1 before (inv is 1/c).
func welford(n, m, m2, v []float64, c, inv float64) {
	if useAVX {
		l := len(v)
		welfordAVX(n[:l], m[:l], m2[:l], v, c, inv)
		return
	}
	welfordGo(n, m, m2, v, c, inv)
}
