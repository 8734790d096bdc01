package main

import (
	"fmt"
	"sort"
)

func main() {
	words := []string{"banana", "kiwi", "apple"}
	sort.Slice(words, func(i, j int) bool { return len(words[i]) < len(words[j]) })
	fmt.Println(words)
}
