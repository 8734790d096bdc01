package main

import (
	"fmt"
	"time"
)

func main() {
	ch := make(chan string)
	go func() {
		time.Sleep(10 * time.Millisecond)
		ch <- "done"
	}()
	select {
	case m := <-ch:
		fmt.Println(m)
	case <-time.After(2 * time.Second):
		fmt.Println("timeout")
	}
}
