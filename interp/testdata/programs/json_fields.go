package main

import (
	"encoding/json"
	"fmt"
)

type User struct {
	Name  string `json:"name"`
	Age   int    `json:"age"`
	token string
}

func main() {
	b, err := json.Marshal(User{"ann", 31, "secret"})
	fmt.Println(string(b), err)
}
