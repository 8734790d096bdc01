package main

import (
	"bufio"
	"fmt"
	"strings"
)

func main() {
	sc := bufio.NewScanner(strings.NewReader("one\ntwo\nthree"))
	n := 0
	for sc.Scan() {
		n++
		fmt.Println(n, sc.Text())
	}
}
