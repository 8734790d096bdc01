package dataframe

// SetDenseMax sets the most codes grouped densely (benchmarks compare the two paths).
func SetDenseMax(n uint64) func() {
	old := denseMax
	denseMax = n
	return func() { denseMax = old }
}

// SetGroupedMedians turns denseGrouped's path for medians on or off (tests compare the two).
func SetGroupedMedians(on bool) func() {
	old := groupedMedians
	groupedMedians = on
	return func() { groupedMedians = old }
}
