package main

import (
	"fmt"
)

type Animal struct{ Name string }

func (a Animal) Hello() string { return "I am " + a.Name }

type Dog struct {
	Animal
	Breed string
}

func main() {
	d := Dog{Animal{"rex"}, "lab"}
	fmt.Println(d.Hello(), d.Breed)
}
