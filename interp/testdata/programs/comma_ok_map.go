package main

import (
	"fmt"
)

func main() {
	ages := map[string]int{"ann": 31}
	if a, ok := ages["ann"]; ok {
		fmt.Println("ann is", a)
	}
	_, ok := ages["bob"]
	fmt.Println("bob known:", ok)
}
