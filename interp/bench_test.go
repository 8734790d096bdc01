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
