package cuda

import (
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/optable"
)

// BenchmarkLower times Lower of a small fused reduction (two normal leaves, a table op, a
// cast, a sum): Lower runs the PTX generator dry to learn whether the GPU expresses a kernel.
func BenchmarkLower(b *testing.B) {
	k := tableKernel(optable.Ops[0], expr.OpGe+1, expr.Float64)
	for b.Loop() {
		if _, _, err := Lower(k); err != nil {
			b.Fatal(err)
		}
	}
}
