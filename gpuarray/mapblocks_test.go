package gpuarray

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// An elementwise function through MapBlocks gives NumPy's bits, for any chunking and with
// broadcasting.
func TestMapBlocksElementwise(t *testing.T) {
	rs := rand.New(rand.NewPCG(5, 5))
	f := func(b [][]float64, shape []int) []float64 {
		out := make([]float64, len(b[0]))
		for i := range out {
			out[i] = b[0][i]*b[1][i] - 1
		}
		return out
	}
	var cs []check
	for i := range 20 {
		shape := npShape(rs, 1+rs.IntN(3), 1, 8)
		x, xin := randArray(rs, "x", shape)
		y, yin := randArray(rs, "y", shape[len(shape)-1:])
		cs = append(cs, check{what: fmt.Sprintf("case %d %v", i, shape), got: MapBlocks(f, x, y), code: "x * y - 1", inputs: []input{xin, yin}})
	}
	runChecks(t, cs)
}

// f sees whole blocks: each block filled with its own sum, against NumPy's sums of the same
// slices.
func TestMapBlocksSeesBlocks(t *testing.T) {
	rs := rand.New(rand.NewPCG(6, 6))
	f := func(b [][]float64, shape []int) []float64 {
		s := 0.0
		for _, v := range b[0] {
			s += v
		}
		out := make([]float64, len(b[0]))
		for i := range out {
			out[i] = s + float64(shape[0])
		}
		return out
	}
	var cs []check
	for i := range 10 {
		shape := npShape(rs, 2, 1, 9)
		x, xin := randArray(rs, "x", shape)
		ch := x.Chunks()
		var rows []string
		r0 := 0
		for _, r := range ch[0] {
			var blocks []string
			c0 := 0
			for _, c := range ch[1] {
				blocks = append(blocks, fmt.Sprintf("np.full((%d, %d), x[%d:%d, %d:%d].sum() + %d)", r, c, r0, r0+r, c0, c0+c, r))
				c0 += c
			}
			rows = append(rows, "["+strings.Join(blocks, ", ")+"]")
			r0 += r
		}
		cs = append(cs, check{what: fmt.Sprintf("case %d chunks %v", i, ch), got: MapBlocks(f, x), code: "np.block([" + strings.Join(rows, ", ") + "])", inputs: []input{xin}})
	}
	compareClose(t, cs, 1e-13)
}

func TestMapBlocksErrors(t *testing.T) {
	x := FromSlice([]float64{1, 2, 3, 4}, Chunks(2))
	short := func(b [][]float64, shape []int) []float64 { return b[0][:1] }
	if err := MapBlocks(short, x).Err(); err == nil || !strings.Contains(err.Error(), "block [0] of shape [2]: f returned 1 values, want 2") {
		t.Errorf("short result: %v", err)
	}
	boom := func(b [][]float64, shape []int) []float64 { return []float64{b[0][5]} }
	if err := MapBlocks(boom, x).Err(); err == nil || !strings.Contains(err.Error(), "f panicked: runtime error: index out of range") {
		t.Errorf("panic: %v", err)
	}
	id := func(b [][]float64, shape []int) []float64 { return b[0] }
	if err := MapBlocks(id, x, FromSlice([]float64{1, 2, 3})).Err(); err == nil || !strings.Contains(err.Error(), "broadcast") {
		t.Errorf("shapes that do not broadcast: %v", err)
	}
	if err := MapBlocks(id).Err(); err == nil {
		t.Error("no arrays: no error")
	}
	if err := MapBlocks(nil, x).Err(); err == nil {
		t.Error("nil function: no error")
	}
	if got, err := MapBlocks(id, FromSlice([]float64{1, 2, 3, 4}, Shape(2, 2), Chunks(1, 2))).ToSlice(); err != nil || fmt.Sprint(got) != "[1 2 3 4]" {
		t.Errorf("identity = %v, %v", got, err)
	}
}
