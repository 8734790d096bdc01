package main

import (
	"bytes"
	"fmt"
	"strings"
	"unicode"
)

// Go 1.24's iterator functions of strings and bytes.
func main() {
	for part := range strings.SplitSeq("a,b,,c", ",") {
		fmt.Printf("%q ", part)
	}
	fmt.Println()
	for part := range strings.SplitAfterSeq("x-y-z", "-") {
		fmt.Printf("%q ", part)
	}
	fmt.Println()
	n := 0
	for f := range strings.FieldsSeq("  the quick  brown fox ") {
		n += len(f)
		fmt.Print(f, "|")
	}
	fmt.Println(n)
	for f := range strings.FieldsFuncSeq("a1b22c333", unicode.IsDigit) {
		fmt.Print(f, " ")
	}
	fmt.Println()
	for line := range strings.Lines("one\ntwo\nthree") {
		fmt.Printf("%q\n", line)
	}
	for line := range bytes.Lines([]byte("α\nβ\n")) {
		fmt.Println(len(line), string(bytes.TrimSpace(line)))
	}
	for part := range bytes.SplitSeq([]byte("1 2 3"), []byte(" ")) {
		if string(part) == "2" {
			continue
		}
		fmt.Print(string(part), ";")
	}
	fmt.Println()
}
