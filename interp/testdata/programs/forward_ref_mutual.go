package main

import "fmt"

// Funcs that call funcs declared after them, mutual recursion and a variadic one included:
// in split mode each declaration is its own cell.
func main() {
	fmt.Println(isEven(10), isOdd(7), isEven(3))
	fmt.Println(total(1, 2, 3))
	fmt.Println(describe(4))
}

func isEven(n int) bool {
	if n == 0 {
		return true
	}
	return isOdd(n - 1)
}

func isOdd(n int) bool {
	if n == 0 {
		return false
	}
	return isEven(n - 1)
}

func describe(n int) string { return fmt.Sprintf("%d is %s", n, parity(n)) }

func total(xs ...int) (n int) {
	for _, x := range xs {
		n += weight(x)
	}
	return
}

func parity(n int) string {
	if isEven(n) {
		return "even"
	}
	return "odd"
}

func weight(x int) int { return x * x }
