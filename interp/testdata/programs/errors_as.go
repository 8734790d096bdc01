package main

import (
	"errors"
	"fmt"
)

type MyErr struct{ Code int }

func (e *MyErr) Error() string { return fmt.Sprintf("code %d", e.Code) }

func do() error { return fmt.Errorf("wrapped: %w", &MyErr{7}) }

func main() {
	var me *MyErr
	if errors.As(do(), &me) {
		fmt.Println("found code", me.Code)
	}
}
