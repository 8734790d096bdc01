package main

import (
	"fmt"
)

type Node struct {
	Val  int
	Next *Node
}

func main() {
	var head *Node
	for i := 3; i > 0; i-- {
		head = &Node{i, head}
	}
	for n := head; n != nil; n = n.Next {
		fmt.Print(n.Val, " ")
	}
	fmt.Println()
}
