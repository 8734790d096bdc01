//go:build !linux

package gpuarray

// exchange reports false: only Linux swaps two names atomically here.
func exchange(tmp, path string) (bool, error) { return false, nil }
