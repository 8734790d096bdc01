package main

import (
	"errors"
	"fmt"
)

var ErrNotFound = errors.New("not found")

func find(k string) error {
	return fmt.Errorf("find %q: %w", k, ErrNotFound)
}

func main() {
	err := find("x")
	fmt.Println(err)
	fmt.Println(errors.Is(err, ErrNotFound))
}
