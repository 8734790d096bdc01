package main

import (
	"fmt"
	"strconv"
	"sync"
)

type config struct {
	name string
	size int
}

// Package-level sync.OnceValue and OnceValues (Go 1.21): the value is computed on the first
// call only.
var loads int

var cfg = sync.OnceValue(func() *config {
	loads++
	return &config{name: "default", size: 3}
})

func parsePort() (int, error) { return strconv.Atoi("8080") }

var port, portErr = sync.OnceValues(parsePort), sync.OnceValues(func() (int, error) {
	return strconv.Atoi("x")
})

func main() {
	fmt.Println(loads)
	fmt.Println(cfg().name, cfg().size, loads)
	p, err := port()
	fmt.Println(p, err)
	_, err = portErr()
	fmt.Println(err)
}
