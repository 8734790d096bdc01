package dataframe

// SetDenseMax sets the most codes grouped densely (benchmarks compare the two paths).
func SetDenseMax(n uint64) func() {
	old := denseMax
	denseMax = n
	return func() { denseMax = old }
}
