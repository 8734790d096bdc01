package main

import (
	"fmt"
)

type ValidationError struct{ Field string }

func (v ValidationError) Error() string { return "invalid " + v.Field }

func check(name string) error {
	if name == "" {
		return ValidationError{"name"}
	}
	return nil
}

func main() {
	fmt.Println(check(""))
	fmt.Println(check("ann") == nil)
}
