//go:build !linux

package engine

// HostBuffer returns n float64s for a held array's host copy (Go memory where the system has
// no anonymous mappings to ask for).
func HostBuffer[T any](_ *T, n int) ([]float64, error) { return make([]float64, n), nil }
