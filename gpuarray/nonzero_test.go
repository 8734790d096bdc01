package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// nonzeroCases returns random cases of Nonzero and Argwhere against NumPy's: random shapes
// and chunks, zeros, NaNs and negative zeros.
func nonzeroCases(seed uint64, n int) []check {
	rs := rand.New(rand.NewPCG(seed, 19))
	var cs []check
	for i := 0; i < n; i++ {
		shape := npShape(rs, 1+rs.IntN(3), 1, 7)
		_, in := randArray(rs, "x", shape)
		for j := range in.data {
			switch rs.IntN(5) {
			case 0, 1:
				in.data[j] = 0
			case 2:
				in.data[j] = math.Copysign(0, -1)
			case 3:
				if rs.IntN(3) == 0 {
					in.data[j] = math.NaN()
				}
			}
		}
		x := FromSlice(in.data, Shape(shape...), ChunkSizes(npChunks(rs, shape)...))
		what := fmt.Sprintf("(shape %v, chunks %v)", shape, x.Chunks())
		cs = append(cs,
			check{what: "Nonzero" + what, list: Nonzero(x), code: "list(np.nonzero(x))", inputs: []input{in}},
			check{what: "Argwhere" + what, got: Argwhere(x), code: "np.argwhere(x)", inputs: []input{in}},
			check{what: "Argwhere of a comparison" + what, got: Argwhere(x.Gt(1)), code: "np.argwhere(x > 1)", inputs: []input{in}},
		)
	}
	return cs
}

func TestNonzeroMatchesNumPy(t *testing.T) {
	runChecks(t, nonzeroCases(1, 30))
	x := FromSlice([]float64{1}, Shape())
	for _, err := range []error{Nonzero(x)[0].Err(), Argwhere(x).Err()} {
		if err == nil || !strings.Contains(err.Error(), "0-d") {
			t.Errorf("0-d input: error %v", err)
		}
	}
}

// TestGPUNonzeroMatchesNumPy runs Nonzero and Argwhere with a GPU scheduler.
func TestGPUNonzeroMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, nonzeroCases(2, 8), OnGPU())
}
