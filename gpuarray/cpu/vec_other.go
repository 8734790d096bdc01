//go:build !amd64

package cpu

// useAVX is false off amd64: the Go loops run.
const useAVX = false

func div(dst, a, b []float64) { divGo(dst, a, b) }

func welford(n, m, m2, v []float64, c, inv float64) { welfordGo(n, m, m2, v, c, inv) }

func abs(dst, a []float64) { absGo(dst, a) }
