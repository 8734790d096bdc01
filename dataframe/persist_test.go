package dataframe_test

import (
	"slices"
	"testing"
)

// TestPersistLeavesComputedInput persists a frame that is already computed: the caller's
// frame must keep its own columns (issue 31: Persist replaced them under the caller).
func TestPersistLeavesComputedInput(t *testing.T) {
	c, err := small().Compute()
	if err != nil {
		t.Fatal(err)
	}
	names := []string{"id", "v", "s"}
	before := map[string]any{}
	for _, n := range names {
		a, err := c.Array(n)
		if err != nil {
			t.Fatal(err)
		}
		before[n] = a
	}
	p := c.Persist()
	if err := p.Err(); err != nil {
		t.Fatal(err)
	}
	if p == c {
		t.Fatal("Persist returned its computed input itself, not a new frame")
	}
	for _, n := range names {
		a, err := c.Array(n)
		if err != nil {
			t.Fatal(err)
		}
		if any(a) != before[n] {
			t.Fatalf("column %q of the input frame changed under the caller after Persist", n)
		}
	}
	// Both frames still hold the same values.
	want, err := c.Int64s("id")
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Int64s("id")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) || len(got) != 8 {
		t.Fatalf("persisted id = %v, input id = %v", got, want)
	}
	gs, err := p.Strings("s")
	if err != nil {
		t.Fatal(err)
	}
	ws, _ := c.Strings("s")
	if !slices.Equal(gs, ws) {
		t.Fatalf("persisted s = %v, input s = %v", gs, ws)
	}
}
