package cpu

import (
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// applyBincount counts a block's values 0..N-1 (a block of any shape), or sums the weights
// of its [value, weight] rows (an (m, 2) block) in row order, as numpy.bincount does for one
// chunk.
// A value that is not an integer in [0, N) is an error: NumPy raises for negative ones, and
// N is the length the caller promised.
func applyBincount(c *plan.CallStep, in dtype.Slice, shape []int) (dtype.Slice, []int, error) {
	if !c.Weighted() {
		b := newBinCounts(c.N)
		var err error
		switch in.DType() {
		case dtype.Float64:
			err = b.addFloats(in.Float64s())
		case dtype.Int64:
			err = b.addInts(in.Int64s(), false)
		default:
			err = b.addFloats(dtype.Convert(in, dtype.Float64).Float64s())
		}
		if err != nil {
			return dtype.Slice{}, nil, err
		}
		data, shape := b.result()
		return data, shape, nil
	}
	vals := dtype.Convert(in, dtype.Float64).Float64s()
	n := c.N
	sums := make([]float64, n)
	for j := 0; j+1 < len(vals); j += 2 {
		i, err := binOf(vals[j], n)
		if err != nil {
			return dtype.Slice{}, nil, err
		}
		sums[i] += vals[j+1]
	}
	return dtype.OfFloat64(sums), []int{n}, nil
}

// binOf is the bin of the value v among n, or the error of a value that is not an integer
// in [0, n).
func binOf(v float64, n int) (int, error) {
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

// binCounts counts values 0..n-1 as they are computed, a block at a time: the fused values of
// a bincount (a histogram's bin numbers) are counted in the loop that computes them, never
// stored (a chunk of 1e8 values stored 800 MB before its count).
type binCounts struct {
	counts []int64
}

func newBinCounts(n int) *binCounts { return &binCounts{counts: make([]int64, n)} }

// add counts the first n values of o's current block.
func (b *binCounts) add(o *operand, n int) error {
	switch o.lane {
	case laneF:
		return b.addFloats(o.vec[:n])
	case laneI:
		return b.addInts(o.ivec[:n], o.dt.Kind() == dtype.KindUint)
	}
	return fmt.Errorf("bincount: %v values", o.dt)
}

func (b *binCounts) addFloats(v []float64) error {
	c := b.counts
	n := len(c)
	for _, x := range v {
		i := int(x)
		if float64(i) != x || uint(i) >= uint(n) {
			_, err := binOf(x, n)
			return err
		}
		c[i]++
	}
	return nil
}

// addInts counts int64 lane values (unsigned ones as their bits).
func (b *binCounts) addInts(v []int64, unsigned bool) error {
	c := b.counts
	n := len(c)
	for _, x := range v {
		if uint64(x) >= uint64(n) {
			v := float64(x)
			if unsigned {
				v = float64(uint64(x))
			}
			_, err := binOf(v, n)
			return err
		}
		c[x]++
	}
	return nil
}

func (b *binCounts) result() (dtype.Slice, []int) {
	return dtype.OfInt64(b.counts), []int{len(b.counts)}
}
