package cuda

import (
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
)

// TestRowsPTX runs the row gather kernels of 4- and 8-byte elements in the PTX interpreter
// over a source and int32 rows with -1s (rows of no source row), in a grid smaller than the
// rows (the grid-stride loop), and checks every output element: the source's element, zero
// for -1, and nothing written past the output's padded end.
func TestRowsPTX(t *testing.T) {
	r := rand.New(rand.NewPCG(33, 8))
	for _, unit := range []int{4, 8} {
		for _, n := range []int{1, 7, 1000, 3*BlockSize + 5} {
			const nsrc = 301
			src := make([]uint64, nsrc)
			for i := range src {
				src[i] = r.Uint64()
				if unit == 4 {
					src[i] &= 1<<32 - 1
				}
			}
			rows := make([]int32, n)
			for i := range rows {
				rows[i] = int32(r.IntN(nsrc))
				if r.IntN(5) == 0 {
					rows[i] = -1
				}
			}
			mem := map[uint64]uint64{}
			put := func(at uint64, i int, v uint64, bytes int) {
				w, sh := at+uint64(i*bytes)&^7, 8*(uint64(i*bytes)&7)
				m := uint64(1)<<(8*bytes) - 1
				if bytes == 8 {
					m = ^uint64(0)
				}
				mem[w] = mem[w]&^(m<<sh) | (v&m)<<sh
			}
			const srcAt, idxAt, outAt = 1 << 20, 2 << 20, 3 << 20
			for i, v := range src {
				put(srcAt, i, v, unit)
			}
			for i, x := range rows {
				put(idxAt, i, uint64(uint32(x)), 4)
			}
			words := int(paddedBytes(int64(n), unit) / 8)
			for i := 0; i < words; i++ {
				mem[outAt+uint64(8*i)] = 0xdeadbeefdeadbeef
			}
			mem[outAt+uint64(8*words)] = 0x5a5a
			p := ptxtest.Parse(t, rowsPTX("8.0", "sm_90", unit))
			blocks := 2
			params := map[string]uint64{"src": srcAt, "idx": idxAt, "out": outAt, "n": uint64(n), "nctaid.x": uint64(blocks)}
			for b := 0; b < blocks; b++ {
				ptxtest.Run(t, p, b, 0, params, mem, nil)
			}
			for i, x := range rows {
				at := uint64(outAt + i*unit)
				got := mem[at&^7] >> (8 * (at & 7))
				if unit == 4 {
					got &= 1<<32 - 1
				}
				want := uint64(0)
				if x >= 0 {
					want = src[x]
				}
				if got != want {
					t.Fatalf("unit %d, %d rows: element %d (row %d) is %#x, want %#x", unit, n, i, x, got, want)
				}
			}
			if mem[outAt+uint64(8*words)] != 0x5a5a {
				t.Fatalf("unit %d, %d rows: the kernel wrote past the output", unit, n)
			}
		}
	}
	if p := rowsPTX("8.0", "sm_90", 4); !strings.Contains(p, ".visible .entry gpn_rows_w4(") || !strings.Contains(p, "st.global.u32") {
		t.Fatalf("4-byte kernel:\n%s", p)
	}
}
