package main

import (
	"fmt"
	"math/big"
)

func main() {
	f := big.NewInt(1)
	for i := int64(1); i <= 25; i++ {
		f.Mul(f, big.NewInt(i))
	}
	fmt.Println(f)
}
