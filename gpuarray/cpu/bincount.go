package cpu

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// applyBincount counts a block's values 0..N-1 (a 1-d block), or sums the weights of its
// [value, weight] rows (an (m, 2) block) in row order, as numpy.bincount does for one chunk.
// A value that is not an integer in [0, N) is an error: NumPy raises for negative ones, and
// N is the length the caller promised.
func applyBincount(c *plan.CallStep, in dtype.Slice, shape []int) (dtype.Slice, []int, error) {
	vals := dtype.Convert(in, dtype.Float64).Float64s()
	n := c.N
	step := 1
	if len(shape) == 2 {
		step = 2
	}
	check := func(v float64) (int, error) {
		i := int(v)
		if float64(i) != v || i < 0 || i >= n {
			if v < 0 {
				return 0, fmt.Errorf("bincount: the value %v is negative", v)
			}
			if float64(i) != v {
				return 0, fmt.Errorf("bincount: the value %v is not an integer", v)
			}
			return 0, fmt.Errorf("bincount: the value %v is not below the length %d", v, n)
		}
		return i, nil
	}
	if step == 1 {
		counts := make([]int64, n)
		for _, v := range vals {
			i, err := check(v)
			if err != nil {
				return dtype.Slice{}, nil, err
			}
			counts[i]++
		}
		return dtype.OfInt64(counts), []int{n}, nil
	}
	sums := make([]float64, n)
	for j := 0; j+1 < len(vals); j += 2 {
		i, err := check(vals[j])
		if err != nil {
			return dtype.Slice{}, nil, err
		}
		sums[i] += vals[j+1]
	}
	return dtype.OfFloat64(sums), []int{n}, nil
}
