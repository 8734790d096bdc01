package main

import (
	"errors"
	"fmt"
)

type NotFound struct{ Key string }

func (e *NotFound) Error() string { return "not found: " + e.Key }

var ErrBase = &NotFound{"base"}

func find(k string) error {
	if k == "base" {
		return fmt.Errorf("find: %w", ErrBase)
	}
	return &NotFound{k}
}

func main() {
	fmt.Println(&NotFound{"x"})
	err := find("y")
	fmt.Println(err)
	wrapped := find("base")
	fmt.Println(wrapped, errors.Is(wrapped, ErrBase), errors.Unwrap(wrapped))
	var nf *NotFound
	if errors.As(wrapped, &nf) {
		fmt.Println("as:", nf.Key)
	}
}
