package main

import (
	"fmt"
)

func describe(x any) string {
	switch v := x.(type) {
	case int:
		return fmt.Sprintf("int %d", v)
	case string:
		return "string " + v
	case []int:
		return fmt.Sprintf("slice of %d", len(v))
	default:
		return "other"
	}
}

func main() {
	for _, x := range []any{1, "two", []int{3, 4}, 5.0} {
		fmt.Println(describe(x))
	}
}
