package main

import (
	"fmt"
	"unicode/utf8"
)

func main() {
	for i, r := range "héllo" {
		fmt.Print(i, ":", string(r), " ")
	}
	fmt.Println(utf8.RuneCountInString("héllo"))
}
