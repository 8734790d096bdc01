package main

import (
	"fmt"
	"strconv"
)

func main() {
	n, err := strconv.Atoi("123")
	fmt.Println(n+1, err)
	_, err = strconv.Atoi("x")
	fmt.Println(err)
	fmt.Println(strconv.Quote("hi"), strconv.FormatInt(255, 16))
}
