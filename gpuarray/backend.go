package gpuarray

import (
	"fmt"
	"sync"
)

// Backend names where computations run when Compute is given no scheduler.
type Backend int

// Backends.
const (
	// CPU runs on all cores of this machine (Threads(0)).
	CPU Backend = iota
	// GPU runs on the first visible NVIDIA GPU (OnGPU()).
	GPU
)

func (b Backend) String() string {
	switch b {
	case CPU:
		return "CPU"
	case GPU:
		return "GPU"
	}
	return fmt.Sprintf("Backend(%d)", int(b))
}

var (
	defaultMu   sync.Mutex
	defaultOpts []ComputeOption
)

// SetBackend makes b the session's default, as a dask user switches NumPy for CuPy; options
// given to Compute still win. Asking for the GPU where none can be used is an error, and the
// default is then left as it was.
func SetBackend(b Backend) error {
	switch b {
	case CPU:
		SetDefaults(Threads(0))
	case GPU:
		if err := GPUError(); err != nil {
			return fmt.Errorf("gpuarray.SetBackend(GPU): %w", err)
		}
		SetDefaults(OnGPU())
	default:
		return fmt.Errorf("gpuarray.SetBackend: unknown backend %d (CPU or GPU)", int(b))
	}
	return nil
}

// SetDefaults sets options applied before every Compute's own (a scheduler, a memory limit);
// SetDefaults() clears them.
func SetDefaults(opts ...ComputeOption) {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	defaultOpts = append([]ComputeOption(nil), opts...)
}

// withDefaults returns the session defaults followed by opts.
func withDefaults(opts []ComputeOption) []ComputeOption {
	defaultMu.Lock()
	defer defaultMu.Unlock()
	if len(defaultOpts) == 0 {
		return opts
	}
	return append(append([]ComputeOption(nil), defaultOpts...), opts...)
}
