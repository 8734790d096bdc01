package main

import (
	"fmt"
	"time"
)

func main() {
	d := 90 * time.Minute
	fmt.Println(d, d.Hours())
	t := time.Date(2024, 2, 29, 12, 0, 0, 0, time.UTC)
	fmt.Println(t.Format("2006-01-02"), t.AddDate(0, 0, 1).Weekday())
}
