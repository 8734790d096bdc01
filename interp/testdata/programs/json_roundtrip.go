package main

import (
	"encoding/json"
	"fmt"
)

type Config struct {
	Host    string `json:"host"`
	Port    int    `json:"port,omitempty"`
	secret  string
	Debug   bool
	retries int
}

func main() {
	c := Config{Host: "localhost", Port: 8080, secret: "s3", Debug: true, retries: 3}
	b, _ := json.MarshalIndent(c, "", "  ")
	fmt.Println(string(b))
	var d Config
	err := json.Unmarshal([]byte(`{"host":"h","secret":"leak","retries":9,"Debug":true}`), &d)
	fmt.Printf("%+v %v\n", d, err)
}
