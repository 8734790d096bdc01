package main

import (
	"errors"
	"fmt"
)

func main() {
	err := errors.Join(errors.New("a"), errors.New("b"))
	fmt.Println(err)
}
