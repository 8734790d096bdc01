package notebooks_test

import (
	"strings"
	"testing"
)

func init() {
	checks["07-array-api"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		contains(t, "output", text,
			"int8 + 10 (wraps): int8 [-126    7   17   10]",
			"int8 + 1.5 (weak float): float64", "int8 + uint8: int16", "float32 * 3 (stays float32): float32",
			"comparisons give bool: bool [ True False  True False]", "sum of bools is int64: int64 2",
			"ArgMax is int64: int64 0", "NaN and 300.7 as uint8: uint8 [  0  44 255]",
			"int8 + 1000 (out of bounds): error: add: the Go integer 1000 is out of bounds for int8",
			"Abs of complex is float64: float64 [5. 1. 1.]",
			"Sum and Mean of complex: complex128", "(0.6666666666666666+1.6666666666666667i)]",
			"Log2: float64", "-1.07400000e+03]", // log2 of the smallest subnormal is exact
			"Round: float64 [-2. -0.  0.  2.  2. inf nan  0.]",
			"Remainder(int8, 3): int8 [2 1 0 1]", "FloorDivide(int8, 0): int8 [0 0 0 0]",
			"BitwiseRightShift: int8 [-1  0  0 -1]", "finite log1p of N(0,1): 0.84",
			"ChunkSizes: [[2 3 5]] NDim: 1 NBytes: 80", "Full(7) of shape (2, 3): NDim 2 NBytes 48",
			"Full(7).Sum(): float64 42", "FromSlice32: float32 [-1.5 -0.5  0.5  1.5]",
			"ToSliceFloat32 of x*2: [-3 -1 1 3] <nil>", "Clip(x, -1, 1): float32 [-1.  -0.5  0.5  1. ]",
			"Round(2.5) and Round(3.5): float64 [2. 4.]", "x.Cos(): float64 [ 1.   0.5 -1. ]",
			"x.Tanh(): float64 [0.         0.78071444 0.99627208]", "z.Conj(): complex128 [ (3-4i) (-1-0i)  (0-1i)]",
			"gob round trip of x*2: float32 [-3. -1.  1.  3.]")
		// Every function ran: no error lines other than the deliberate one.
		if n := strings.Count(text, "error:"); n != 1 {
			t.Errorf("%d errors, want the one out-of-bounds integer:\n%s", n, text)
		}
	}
}
