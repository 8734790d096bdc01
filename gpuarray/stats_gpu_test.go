package gpuarray

import "testing"

// The statistics are compositions of fused elementwise ops and reductions, so the GPU runs
// them with its own kernels; on exact data they equal NumPy's bit for bit there too.
func TestGPUStatsMatchNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, statChecks(4, 40), OnGPU())
}
