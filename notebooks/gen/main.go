// Command gen regenerates the example notebooks (notebooks/NAME.ipynb) from their sources
// (notebooks/src/NAME.go.txt). Run it through `go generate ./notebooks`.
package main

import (
	"fmt"
	"os"

	"github.com/gpunotes/gpunotes/notebooks"
)

func main() {
	changed, err := notebooks.Generate(".")
	if err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
	for _, n := range changed {
		fmt.Println("wrote", n+".ipynb")
	}
}
