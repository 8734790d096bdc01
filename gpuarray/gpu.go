package gpuarray

import "errors"

// gpuScheduler returns the scheduler of the GPU backend for devs (none: all visible GPUs).
// The GPU backend (gpuarray/cuda) plugs in here.
func gpuScheduler(devs []int) (Scheduler, error) {
	_ = devs
	return nil, errors.New("gpuarray: no GPU backend in this build (gpuarray/cuda is not wired in yet)")
}
