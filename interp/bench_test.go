package interp

import (
	"context"
	"testing"
)

// BenchmarkTrivialCell is the interpreter's share of a trivial cell's round trip.
func BenchmarkTrivialCell(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	out := newRec()
	ctx := context.Background()
	for i := 0; i < b.N; i++ {
		if _, err := s.Execute(ctx, "1+1", out); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkPrint10k is the interpreter's share of a cell printing 10,000 lines (the kernel
// benchmark's print cell): the interpreted loop, the writes, and the capture pumps.
func BenchmarkPrint10k(b *testing.B) {
	s, err := New(Options{})
	if err != nil {
		b.Fatal(err)
	}
	out := newRec()
	ctx := context.Background()
	if _, err := s.Execute(ctx, `import "fmt"`, out); err != nil {
		b.Fatal(err)
	}
	for i := 0; i < b.N; i++ {
		if _, err := s.Execute(ctx, "for i := 0; i < 10000; i++ { fmt.Println(i) }", out); err != nil {
			b.Fatal(err)
		}
	}
}
