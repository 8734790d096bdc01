package main

import (
	"fmt"
)

type Account struct{ balance int }

func (a *Account) Deposit(n int) { a.balance += n }

func (a Account) Balance() int { return a.balance }

func main() {
	var acc Account
	acc.Deposit(50)
	acc.Deposit(25)
	fmt.Println(acc.Balance())
}
