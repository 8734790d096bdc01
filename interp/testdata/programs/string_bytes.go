package main

import (
	"bytes"
	"fmt"
)

func main() {
	b := []byte("hello")
	b[0] = 'H'
	fmt.Println(string(b), bytes.Contains(b, []byte("ell")), bytes.ToUpper(b))
}
