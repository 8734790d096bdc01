package main

import (
	"fmt"
)

func main() {
	var ps []*string
	for _, s := range []string{"a", "b", "c"} {
		ps = append(ps, &s)
	}
	for _, p := range ps {
		fmt.Print(*p)
	}
	fmt.Println()
}
