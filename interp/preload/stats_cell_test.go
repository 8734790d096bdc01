package preload_test

import (
	"context"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/interp"
	"github.com/gpunotes/gpunotes/interp/preload"
)

// TestStatsInCell runs the statistics from a cell through the preloaded gpuarray package
// (methods of Array and the package functions).
func TestStatsInCell(t *testing.T) {
	s, err := interp.New(interp.Options{Symbols: preload.Symbols, Preload: preload.Packages})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	out := &textOut{}
	_, err = s.Execute(context.Background(), `import ("fmt"; "math")
x := gpuarray.FromSlice([]float64{1, math.NaN(), 3, 4}, gpuarray.Shape(2, 2))
m, _ := x.NanMean(0).ToSlice()
p, _ := x.Prod(1).ToSlice()
c, _ := gpuarray.CumulativeSum(x.NanSum(1), 0, true).ToSlice()
a, _ := x.Any().Float64()
fmt.Println(m, p, c, a)`, out)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(out.String()); got != "[2 4] [NaN 12] [0 1 8] 1" {
		t.Errorf("cell printed %q", got)
	}
}
