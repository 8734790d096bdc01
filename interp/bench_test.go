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

// BenchmarkNewSession is a session's start (the kernel's start and every restart), with the
// generic standard library sources it compiles.
func BenchmarkNewSession(b *testing.B) {
	for i := 0; i < b.N; i++ {
		if _, err := New(Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkSortCell sorts 100,000 ints in a cell: through the interpreted generic slices.Sort
// (compiled sort.Slice, compared through gnrt.Compare) and through compiled sort.Ints, the
// speed an instantiation for []int would have.
func BenchmarkSortCell(b *testing.B) {
	for _, c := range []struct{ name, sort string }{{"slices.Sort", "slices.Sort(xs)"}, {"sort.Ints", "sort.Ints(xs)"}} {
		b.Run(c.name, func(b *testing.B) {
			s, err := New(Options{})
			if err != nil {
				b.Fatal(err)
			}
			out := newRec()
			ctx := context.Background()
			if _, err := s.Execute(ctx, "import (\"slices\"; \"sort\")\nfunc fill(xs []int) { for i := range xs { xs[i] = (i * 7919) % 100003 } }\nxs := make([]int, 100000)", out); err != nil {
				b.Fatal(err)
			}
			for i := 0; i < b.N; i++ {
				if _, err := s.Execute(ctx, "fill(xs)\n"+c.sort, out); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
