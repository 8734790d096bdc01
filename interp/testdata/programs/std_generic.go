package main

import (
	"crypto/hkdf"
	"crypto/pbkdf2"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"sync"
)

// Generic functions of the standard library: sync.OnceValue(s) (Go 1.21), crypto/hkdf and
// crypto/pbkdf2 (Go 1.24).
func main() {
	onceDemo()

	key, err := hkdf.Key(sha256.New, []byte("secret"), []byte("salt"), "info", 16)
	fmt.Println(hex.EncodeToString(key), err)
	prk, err := hkdf.Extract(sha256.New, []byte("secret"), []byte("salt"))
	fmt.Println(len(prk), err)
	dk, err := pbkdf2.Key(sha256.New, "password", []byte("salt"), 1000, 16)
	fmt.Println(hex.EncodeToString(dk), err)
}

// onceDemo calls sync.OnceValue(s); at a cell's top level yaegi's compiler cannot yet define
// a variable from them (it crashes, and the cell says so).
func onceDemo() {
	calls := 0
	load := sync.OnceValue(func() int {
		calls++
		return 42
	})
	fmt.Println(load()+1, load(), calls)
	parse := sync.OnceValues(func() (int, error) {
		calls++
		return strconv.Atoi("17")
	})
	n, err := parse()
	n2, _ := parse()
	fmt.Println(n, err, n2, calls)
	boom := sync.OnceValue(func() string { panic("once") })
	for i := 0; i < 2; i++ {
		func() {
			defer func() { fmt.Println("recovered", recover()) }()
			boom()
		}()
	}
}
