package interp

import (
	"context"
	"testing"
)

// BenchmarkCallDepthWatch measures what the call depth limit (depth.go) costs call-heavy
// cells: recursive fib(27), and a loop calling a small cell function 1e7 times, each with the
// limit (the default) and without it (MaxCallDepth -1), in the same run. Compare the pairs:
//
//	go test -run '^$' -bench CallDepthWatch -count 5 ./interp
func BenchmarkCallDepthWatch(b *testing.B) {
	cells := []struct{ name, decl, cell string }{
		{"fib27", "func fib(n int) int { if n < 2 { return n }; return fib(n-1) + fib(n-2) }", "fib(27)"},
		{"loop1e7", "func small(x int) int { return x + 1 }", "acc := 0\nfor i := 0; i < 10000000; i++ { acc = small(acc) }\nacc"},
	}
	for _, c := range cells {
		for _, mode := range []struct {
			name  string
			depth int
		}{{"limit", 0}, {"nolimit", -1}} {
			b.Run(c.name+"/"+mode.name, func(b *testing.B) {
				s, err := New(Options{Preload: []string{}, MaxCallDepth: mode.depth})
				if err != nil {
					b.Fatal(err)
				}
				out := newRec()
				ctx := context.Background()
				if _, err := s.Execute(ctx, c.decl, out); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				for i := 0; i < b.N; i++ {
					if _, err := s.Execute(ctx, c.cell, out); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
