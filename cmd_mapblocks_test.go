package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/internal/testenv"
)

// TestClusterMapBlocksFromCells: a block function declared in a cell is shipped to the
// workers by name, as Submit ships functions, and gives what MapBlocks gives in the cell.
func TestClusterMapBlocksFromCells(t *testing.T) {
	bin := testenv.Binary(t)
	s, err := newUserSession()
	if err != nil {
		t.Fatal(err)
	}
	cells := []string{
		"import \"fmt\"",
		"func sq(blocks [][]float64, shape []int) []float64 {\n\tout := make([]float64, len(blocks[0]))\n\tfor i, v := range blocks[0] {\n\t\tout[i] = v*v + float64(shape[0])\n\t}\n\treturn out\n}",
		fmt.Sprintf("c, err := cluster.NewLocalCUDA(cluster.Options{NWorkers: 2, CPUOnly: true, Binary: %q})\nif err != nil { panic(err) }", bin),
		"x := gpuarray.Arange(0, 12, 1, gpuarray.Chunks(5))\nys, err := c.MapBlocks(\"sq\", x).ToSlice()\nif err != nil { panic(err) }\nfmt.Println(\"cluster\", ys)",
		"zs, err := gpuarray.MapBlocks(sq, x).ToSlice()\nif err != nil { panic(err) }\nfmt.Println(\"local\", zs)",
		"c.Close()",
	}
	var all strings.Builder
	for i, code := range cells {
		out := &cellOut{}
		if _, err := s.Execute(context.Background(), code, out); err != nil {
			t.Fatalf("cell %d: %v\n%s", i, err, out.text.String())
		}
		all.WriteString(out.text.String())
	}
	got := all.String()
	const want = "[5 6 9 14 21 30 41 54 69 86 102 123]\n"
	for _, w := range []string{"cluster " + want, "local " + want} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in the cells' output:\n%s", w, got)
		}
	}
}
