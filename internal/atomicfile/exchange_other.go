//go:build !linux

package atomicfile

// Exchange reports false: only Linux swaps two names atomically here.
func Exchange(a, b string) (bool, error) { return false, nil }
