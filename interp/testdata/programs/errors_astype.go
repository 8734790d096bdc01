package main

import (
	"errors"
	"fmt"
)

type TimeoutErr struct{ Op string }

func (e *TimeoutErr) Error() string { return e.Op + " timed out" }

func fetch(op string) error {
	return fmt.Errorf("fetch: %w", &TimeoutErr{op})
}

func main() {
	if te, ok := errors.AsType[*TimeoutErr](fetch("read")); ok {
		fmt.Println("timeout in", te.Op)
	}
	_, ok := errors.AsType[*TimeoutErr](errors.New("plain"))
	fmt.Println(ok)
}
