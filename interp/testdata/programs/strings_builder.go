package main

import (
	"fmt"
	"strings"
)

func main() {
	var b strings.Builder
	for i := 3; i > 0; i-- {
		fmt.Fprintf(&b, "%d...", i)
	}
	b.WriteString("go")
	fmt.Println(b.String())
	fmt.Println(strings.Fields(" a b  c "), strings.ToUpper("x"))
}
