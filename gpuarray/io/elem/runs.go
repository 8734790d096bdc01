package elem

// BoxRuns calls fn for each contiguous run of elements that a box (origin, shape) covers in a
// C-order array of shape full, in order: the run's first element in the box (row-major over
// shape), its linear index in the full array, and its length. A run spans the trailing axes the
// box covers whole, so reading or writing a box takes one positioned I/O per run. An empty box
// has no runs.
func BoxRuns(full, origin, shape []int, fn func(box, lin, n int64) error) error {
	r := len(full)
	total := int64(1)
	for _, d := range shape {
		total *= int64(d)
	}
	if total == 0 {
		return nil
	}
	str := make([]int64, r)
	s := int64(1)
	for d := r - 1; d >= 0; d-- {
		str[d] = s
		s *= int64(full[d])
	}
	// k: the outermost axis of a run; the run covers the axes after k whole.
	k, run := r-1, int64(1)
	if r > 0 {
		run = int64(shape[r-1])
		for k > 0 && shape[k] == full[k] {
			k--
			run *= int64(shape[k])
		}
	}
	pos := make([]int, max(k, 0))
	for o := int64(0); ; o += run {
		lin := int64(0)
		for d := 0; d < r; d++ {
			i := origin[d]
			if d < k {
				i += pos[d]
			}
			lin += int64(i) * str[d]
		}
		if err := fn(o, lin, run); err != nil {
			return err
		}
		d := k - 1
		for ; d >= 0; d-- {
			pos[d]++
			if pos[d] < shape[d] {
				break
			}
			pos[d] = 0
		}
		if d < 0 {
			return nil
		}
	}
}
