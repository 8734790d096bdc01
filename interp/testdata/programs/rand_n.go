package main

import (
	"fmt"
	"math/rand/v2"
	"time"
)

func main() {
	ok := true
	for i := 0; i < 1000; i++ {
		n := rand.N(10)
		d := rand.N(3 * time.Second)
		u := rand.N(uint8(7))
		if n < 0 || n >= 10 || d < 0 || d >= 3*time.Second || u >= 7 {
			ok = false
		}
	}
	fmt.Println(ok, rand.N(1), rand.N(int64(1)))
	fmt.Printf("%T %T\n", rand.N(5), rand.N(time.Minute))
}
