package devsort

// SetScratchLimit makes sort see limit bytes free in the pool (0: the pool's own figure) and
// returns the function that restores it.
func SetScratchLimit(limit uint64) func() {
	old := scratchLimit
	scratchLimit = limit
	return func() { scratchLimit = old }
}
