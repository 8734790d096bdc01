package interp

import (
	"context"
	"testing"
	"time"
)

// BenchmarkCallDepthWatch measures what the call depth limit (depth.go) costs call-heavy
// cells: recursive fib(27), and a loop calling a small cell function 1e7 times. Each
// iteration runs the cell in a session with the limit (the default) and in one without it
// (MaxCallDepth -1), alternating which goes first, and reports both times and their ratio:
//
//	go test -run '^$' -bench CallDepthWatch -benchtime 5x ./interp
func BenchmarkCallDepthWatch(b *testing.B) {
	cells := []struct{ name, decl, cell string }{
		{"fib27", "func fib(n int) int { if n < 2 { return n }; return fib(n-1) + fib(n-2) }", "fib(27)"},
		{"loop1e7", "func small(x int) int { return x + 1 }\nfunc loop() int { acc := 0; for i := 0; i < 10000000; i++ { acc = small(acc) }; return acc }", "loop()"},
	}
	for _, c := range cells {
		b.Run(c.name, func(b *testing.B) {
			ctx := context.Background()
			var sessions [2]*Session
			for k, depth := range []int{0, -1} {
				s, err := New(Options{Preload: []string{}, MaxCallDepth: depth})
				if err != nil {
					b.Fatal(err)
				}
				if _, err := s.Execute(ctx, c.decl, newRec()); err != nil {
					b.Fatal(err)
				}
				sessions[k] = s
			}
			var took [2]time.Duration
			dumps := depthDumps.Load()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				for j := 0; j < 2; j++ {
					k := (i + j) % 2
					t0 := time.Now()
					if _, err := sessions[k].Execute(ctx, c.cell, newRec()); err != nil {
						b.Fatal(err)
					}
					took[k] += time.Since(t0)
				}
			}
			b.ReportMetric(float64(took[0].Nanoseconds())/float64(b.N), "ns-limit/op")
			b.ReportMetric(float64(took[1].Nanoseconds())/float64(b.N), "ns-nolimit/op")
			b.ReportMetric(float64(took[0])/float64(took[1]), "limit/nolimit")
			b.ReportMetric(float64(depthDumps.Load()-dumps)/float64(b.N), "dumps/op")
		})
	}
}
