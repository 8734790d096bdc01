package cufft

import (
	"fmt"
	"math"

	"github.com/gpunotes/gpunotes/gpuarray/fft"
)

// planLimit is the largest count cufftPlanMany takes for a transform's length, batch, stride
// and distance: they are C ints.
const planLimit = math.MaxInt32

// checkPlanSizes says why transform cannot plan transforms of length n over the lines of l in
// one cufftPlanMany, or returns nil. A line longer than a C int (over 2^31 - 1 elements) needs
// the four-step decomposition (fourstep.go), which one complex line kept on the device or
// copied from there takes; any other such transform is refused with the sizes rather than
// planned with lengths that wrap.
func checkPlanSizes(l fft.Lines, n int) error {
	batch, stride := l.Outer, 1
	if l.Inner > 1 {
		batch, stride = l.Inner, l.Inner
	}
	switch {
	case n > planLimit:
		return fmt.Errorf("cufft: a line of %d elements is longer than one cuFFT plan takes (%d); the four-step decomposition runs only for one complex line on the device (%s not 0)", n, planLimit, fourStepEnv)
	case batch > planLimit, stride > planLimit:
		return fmt.Errorf("cufft: %d lines of %d elements (stride %d) are more than one cuFFT plan takes (%d a count): chunk the other axes smaller", l.Count(), n, stride, planLimit)
	}
	return nil
}
