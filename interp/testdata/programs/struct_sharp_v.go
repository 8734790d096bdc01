package main

import "fmt"

type Item struct {
	Name  string
	price float64
	tags  []string
}

type Cart struct {
	Owner string
	Items []Item
	ref   *Item
}

func main() {
	it := Item{"pen", 1.5, []string{"office"}}
	c := Cart{"ann", []Item{it}, nil}
	fmt.Printf("%#v\n", it)
	fmt.Printf("%+v\n", c)
	fmt.Printf("%v %T %T\n", c, c.Items, map[string]Cart{})
	s := fmt.Sprintf("%+v", &it)
	fmt.Println(s)
}
