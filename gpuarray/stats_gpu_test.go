package gpuarray

import "testing"

// The statistics are compositions of fused elementwise ops and reductions, so the GPU runs
// them with its own kernels; on exact data they equal NumPy's bit for bit there too.
func TestGPUStatsMatchNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, statChecks(4, 40), OnGPU())
}

// Prod and the cumulative scans run on the GPU as generated scans (a thread per line on these
// short lines, the CPU's order); their results are NumPy's bit for bit.
func TestGPUScansMatchNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, scanChecks(4, 30), OnGPU())
}
