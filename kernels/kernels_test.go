package kernels

import (
	"os"
	"strings"
	"testing"
)

// TestTablesHeaderCurrent fails when zig_tables.h differs from what gpuarray/rng generates; run
// with GPUNOTES_UPDATE=1 to rewrite it (then regenerate the PTX with gen.sh).
func TestTablesHeaderCurrent(t *testing.T) {
	want := TablesHeader()
	if os.Getenv("GPUNOTES_UPDATE") == "1" {
		if err := os.WriteFile("zig_tables.h", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("zig_tables.h")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("zig_tables.h is stale: run GPUNOTES_UPDATE=1 go test ./kernels, then kernels/gen.sh on a machine with nvcc")
	}
	if !strings.Contains(want, "0x3fe0000000000000") && !strings.Contains(want, "gpn_zig_f[257]") {
		t.Fatalf("header lacks the F table")
	}
}

// TestPTXCurrent fails when the committed PTX was generated from other sources than those in
// the tree.
func TestPTXCurrent(t *testing.T) {
	want, err := SourceHash()
	if err != nil {
		t.Fatal(err)
	}
	got, err := RecordedHash()
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Fatalf("kernels/ptx was generated from other sources (recorded %s, sources hash to %s): run kernels/gen.sh on a machine with nvcc and commit kernels/ptx", got, want)
	}
	for _, fl := range []string{Generic, SM90} {
		p, err := LibPTX(fl)
		if err != nil {
			t.Fatal(err)
		}
		for _, sym := range []string{".visible .func", "gpn_normal_slow", "gpn_block_sum", "gpn_zig_k", ".entry gpn_fill_random"} {
			if !strings.Contains(string(p), sym) {
				t.Errorf("lib_%s.ptx lacks %q", fl, sym)
			}
		}
		sp, err := SortPTX(fl)
		if err != nil {
			t.Fatal(err)
		}
		for _, sym := range []string{".entry gpn_radix_upfront64", ".entry gpn_radix_tile64kx", ".entry gpn_radix_tile64k", ".entry gpn_radix_tile32x", ".entry gpn_radix_tile32", ".entry gpn_sort_lines64", ".entry gpn_sort_out"} {
			if !strings.Contains(string(sp), sym) {
				t.Errorf("sort_%s.ptx lacks %q", fl, sym)
			}
		}
	}
}

func TestFlavourFor(t *testing.T) {
	if FlavourFor(9, 0) != SM90 || FlavourFor(8, 6) != Generic || FlavourFor(10, 0) != SM90 {
		t.Fatal("wrong flavour choice")
	}
}
