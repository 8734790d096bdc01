package main

import (
	"fmt"
	"strings"
)

type Celsius float64

type Point struct{ X, Y float64 }

type Names []string

type ID int

type Grid [2][2]int

type Scores map[string]int

func main() {
	c := Celsius(21.5)
	fmt.Printf("%g %v %.2f %e %T\n", c, c, c, c, c)
	fmt.Printf("%g %v %+v %#v %T\n", Point{1.5, -2}, Point{1.5, -2}, Point{1.5, -2}, Point{1.5, -2}, Point{})
	fmt.Printf("%g %T %v\n", []Celsius{1, 2.25}, []Celsius{}, []Celsius{3})
	p := &Point{3, 4}
	ptr := fmt.Sprintf("%p", p)
	fmt.Println(strings.HasPrefix(ptr, "0x"), ptr == fmt.Sprintf("%p", p), ptr != "%!p(main.Point)")
	fmt.Printf("%v %+v %T\n", p, p, p)
	n := Names{"a", "b"}
	sp := fmt.Sprintf("%p", n)
	fmt.Println(strings.HasPrefix(sp, "0x"), sp == fmt.Sprintf("%p", []string(n)))
	fmt.Printf("%v %q %T %d\n", n, n, n, len(n))
	id := ID(7)
	fmt.Printf("%v %d %x %T %05d\n", id, id, id, id, id)
	fmt.Printf("%v %T\n", Grid{{1, 2}, {3, 4}}, Grid{})
	fmt.Printf("%v %T\n", Scores{"a": 1}, Scores{})
	var ip *ID
	fmt.Printf("%v %T %p\n", ip, ip, ip)
	fmt.Println(fmt.Sprint(c), fmt.Sprintf("%6.1f|%-6g|", c, c))
}
