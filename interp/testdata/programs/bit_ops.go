package main

import (
	"fmt"
	"math/bits"
)

func main() {
	x := uint8(0b1011_0001)
	fmt.Println(x&0x0f, x|0x0e, x^0xff, x<<1, x>>4, bits.OnesCount8(x))
}
