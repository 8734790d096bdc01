package main

import (
	"fmt"
	"iter"
)

type Stack[T any] struct {
	items []T
}

func (s *Stack[T]) Push(v T) { s.items = append(s.items, v) }

// Top yields from the top of the stack down.
func (s *Stack[T]) Top() iter.Seq[T] {
	return func(yield func(T) bool) {
		for i := len(s.items) - 1; i >= 0; i-- {
			if !yield(s.items[i]) {
				return
			}
		}
	}
}

func (s *Stack[T]) Indexed() iter.Seq2[int, T] {
	return func(yield func(int, T) bool) {
		for i, v := range s.items {
			if !yield(i, v) {
				return
			}
		}
	}
}

func squares() iter.Seq[int] {
	return func(yield func(int) bool) {
		for n := 1; ; n++ {
			if !yield(n * n) {
				return
			}
		}
	}
}

func main() {
	st := &Stack[string]{}
	for _, w := range []string{"a", "bb", "ccc"} {
		st.Push(w)
	}
	for w := range st.Top() {
		fmt.Println(w, len(w))
	}
	for i, w := range st.Indexed() {
		if i == 2 {
			break
		}
		fmt.Println(i, w)
	}
	for sq := range squares() {
		if sq > 30 {
			break
		}
		fmt.Print(sq, " ")
	}
	fmt.Println()
}
