package gpuarray

import "testing"

// The NumPy property cases of manipulation and creation, computed by the GPU backend. Their
// values are multiples of 1/64 of modest size, so sums are exact and every result must equal
// NumPy's bit for bit.

func TestGPUManipMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, manipChecks(2, 20), OnGPU())
}

func TestGPUCreateMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, createChecks(2, 20), OnGPU())
}

func TestGPUIndexMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, indexChecks(2, 20), OnGPU())
}

func TestGPUPrintsLikeCPU(t *testing.T) {
	needGPU(t)
	x := Tile(Arange(0, 12, 1).Reshape(3, 4), 1, 2)
	g, err := x.Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	c, err := x.Compute(Inline())
	if err != nil {
		t.Fatal(err)
	}
	if g.String() != c.String() {
		t.Errorf("GPU:\n%s\nCPU:\n%s", g, c)
	}
}
