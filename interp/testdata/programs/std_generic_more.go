package main

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
)

type celsius float64

// More generic names of the standard library: reflect.TypeFor (Go 1.22), runtime.AddCleanup
// (Go 1.24), and math/rand/v2 imported under its package name.
func main() {
	fmt.Println(reflect.TypeFor[int](), reflect.TypeFor[[]string](), reflect.TypeFor[error]())
	fmt.Println(reflect.TypeFor[celsius]().Kind(), reflect.TypeFor[map[string]int]().Key())
	fmt.Println(kindOf())
	p := new(int)
	c := runtime.AddCleanup(p, func(s string) { fmt.Println(s) }, "cleaned")
	c.Stop()
	fmt.Println("stopped", *p)
	fmt.Println(rand.IntN(1), rand.Int64N(1))
}

func kindOf() reflect.Kind { return reflect.TypeFor[*celsius]().Elem().Kind() }
