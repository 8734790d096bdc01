// Command gen writes the Array API coverage section of the README from package apicov.
package main

import (
	"fmt"
	"os"

	"github.com/gpunotes/gpunotes/gpuarray/apicov"
)

func main() {
	const path = "../../README.md" // run by go generate in gpuarray/apicov
	b, err := os.ReadFile(path)
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicov:", err)
		os.Exit(1)
	}
	out, err := apicov.Splice(string(b))
	if err != nil {
		fmt.Fprintln(os.Stderr, "apicov:", err)
		os.Exit(1)
	}
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, "apicov:", err)
		os.Exit(1)
	}
	have, total := apicov.Count()
	fmt.Printf("README: Array API coverage %d of %d\n", have, total)
}
