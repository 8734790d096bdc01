package cuda

import (
	"math/rand/v2"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
)

// strMem lays out strings in the interpreter's memory as a StrColumn (offsets at off, bytes at
// data) and returns the memory.
func strMem(mem map[uint64]uint64, off, data uint64, ss []string) {
	at := int64(0)
	putBytes(mem, data, []byte(strings.Join(ss, "")))
	for i, s := range ss {
		mem[off+uint64(8*i)] = uint64(at)
		at += int64(len(s))
	}
	mem[off+uint64(8*len(ss))] = uint64(at)
}

// putBytes writes b from byte address base (8-aligned), the last word padded with zeros.
func putBytes(mem map[uint64]uint64, base uint64, b []byte) {
	for i := 0; i < len(b); i += 8 {
		var w uint64
		for j := 0; j < 8 && i+j < len(b); j++ {
			w |= uint64(b[i+j]) << (8 * j)
		}
		mem[base+uint64(i)] = w
	}
}

func byteAt(mem map[uint64]uint64, at uint64) byte { return byte(mem[at&^7] >> (8 * (at & 7))) }

// randomStrings draws n strings of a small alphabet with multi-byte code points and empty
// strings, so that literals match often.
func randomStrings(rs *rand.Rand, n int) []string {
	alpha := []string{"a", "b", "ab", "é", "日本", "z", ""}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range rs.IntN(7) {
			b.WriteString(alpha[rs.IntN(len(alpha))])
		}
		out[i] = b.String()
	}
	return out
}

// runStr interprets op's kernel over n rows with params (the grid StrMatch launches).
func runStr(t *testing.T, op ptx.StrOp, n int, params map[string]uint64, mem map[uint64]uint64) {
	t.Helper()
	src, _, err := ptx.StrPTX("8.0", "sm_90", op)
	if err != nil {
		t.Fatal(err)
	}
	p := ptxtest.Parse(t, src)
	blocks, err := strBlocks(int64(n))
	if err != nil {
		t.Fatal(err)
	}
	for b := range int(blocks) {
		ptxtest.Run(t, p, b, 0, params, mem, nil)
	}
}

// TestStrMatchPTX runs the string kernels of a column and a literal in the PTX interpreter
// and compares each string's result with Go's (utf8.RuneCountInString, ==, strings.HasPrefix,
// HasSuffix, Contains), for literals empty, short, multi-byte and longer than the strings.
func TestStrMatchPTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(31, 2))
	const offAt, dataAt, litAt, outAt = 1 << 20, 1 << 24, 1 << 28, 1 << 32
	ss := randomStrings(rs, 600)
	ss = append(ss, "", "ab", "abab", "日本語", strings.Repeat("ab", 40))
	n := len(ss)
	ref := map[ptx.StrOp]func(s, lit string) bool{
		ptx.StrEq: func(s, lit string) bool { return s == lit }, ptx.StrStartsWith: strings.HasPrefix,
		ptx.StrEndsWith: strings.HasSuffix, ptx.StrContains: strings.Contains,
	}
	// Lengths: one int64 word per string.
	mem := map[uint64]uint64{}
	strMem(mem, offAt, dataAt, ss)
	runStr(t, ptx.StrLen, n, map[string]uint64{"off": offAt, "data": dataAt, "n": uint64(n), "out": outAt}, mem)
	for i, s := range ss {
		if got, want := int64(mem[outAt+uint64(8*i)]), int64(utf8.RuneCountInString(s)); got != want {
			t.Errorf("len(%q) = %d, want %d", s, got, want)
		}
	}
	for _, op := range []ptx.StrOp{ptx.StrEq, ptx.StrStartsWith, ptx.StrEndsWith, ptx.StrContains} {
		for _, lit := range []string{"", "ab", "a", "é", "日本", "bab", "zzzzzzzzzzzzzzzzzzzzzz"} {
			mem := map[uint64]uint64{}
			strMem(mem, offAt, dataAt, ss)
			putBytes(mem, litAt, append([]byte(lit), 0))
			for i := 0; i < n; i += 8 {
				mem[outAt+uint64(i)] = 0
			}
			runStr(t, op, n, map[string]uint64{"off": offAt, "data": dataAt, "n": uint64(n), "lit": litAt, "litn": uint64(len(lit)), "out": outAt}, mem)
			hits := 0
			for i, s := range ss {
				want := ref[op](s, lit)
				if got := byteAt(mem, outAt+uint64(i)); got != map[bool]byte{true: 1}[want] {
					t.Errorf("%v(%q, %q) = %d, want %v", op, s, lit, got, want)
				}
				if want {
					hits++
				}
			}
			if lit == "ab" && hits == 0 {
				t.Errorf("%v: no string matches %q: the test checks nothing", op, lit)
			}
		}
	}
}

// TestStrEqColsPTX compares rows of two string columns through their positions in the
// interpreter against Go's ==.
func TestStrEqColsPTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(31, 3))
	const offA, dataA, ia, offB, dataB, ib, outAt = 1 << 20, 1 << 22, 1 << 24, 1 << 26, 1 << 28, 1 << 30, 1 << 32
	a, b := randomStrings(rs, 300), randomStrings(rs, 200)
	const n = 700
	pa, pb := make([]int, n), make([]int, n)
	mem := map[uint64]uint64{}
	strMem(mem, offA, dataA, a)
	strMem(mem, offB, dataB, b)
	for i := range n {
		pa[i], pb[i] = rs.IntN(len(a)), rs.IntN(len(b))
		if i%5 == 0 { // equal strings at different positions
			a[pa[i]] = b[pb[i]]
		}
	}
	strMem(mem, offA, dataA, a)
	for i := range n {
		mem[ia+uint64(8*i)], mem[ib+uint64(8*i)] = uint64(pa[i]), uint64(pb[i])
	}
	for i := 0; i < n; i += 8 {
		mem[outAt+uint64(i)] = 0
	}
	runStr(t, ptx.StrEqCols, n, map[string]uint64{"off": offA, "data": dataA, "ia": ia, "off2": offB, "data2": dataB, "ib": ib, "n": n, "out": outAt}, mem)
	eq := 0
	for i := range n {
		want := a[pa[i]] == b[pb[i]]
		if got := byteAt(mem, outAt+uint64(i)); got != map[bool]byte{true: 1}[want] {
			t.Errorf("row %d: %q == %q gave %d", i, a[pa[i]], b[pb[i]], got)
		}
		if want {
			eq++
		}
	}
	if eq < n/10 {
		t.Errorf("%d equal rows of %d: the test's equal strings were lost", eq, n)
	}
}

// TestStrEncodePTX dictionary-encodes strings in the interpreter: equal strings get equal
// slots and different strings different ones (Go's map of the strings), a taken slot names a
// string of its value, and the slots are where the Go hash (ptx.StrHash) starts probing.
func TestStrEncodePTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(31, 4))
	const offAt, dataAt, tableAt, slotAt = 1 << 20, 1 << 24, 1 << 28, 1 << 32
	for _, n := range []int{1, 5, 700} {
		ss := randomStrings(rs, n)
		mem := map[uint64]uint64{}
		strMem(mem, offAt, dataAt, ss)
		tsize := StrTableSize(int64(n))
		for i := range tsize {
			mem[tableAt+uint64(8*i)] = 0
		}
		runStr(t, ptx.StrEncode, n, map[string]uint64{"off": offAt, "data": dataAt, "n": uint64(n), "table": tableAt, "tsize": uint64(tsize), "slot": slotAt}, mem)
		slotOf := map[string]uint64{}
		used := map[uint64]string{}
		for i, s := range ss {
			sl := mem[slotAt+uint64(8*i)]
			if sl >= uint64(tsize) {
				t.Fatalf("string %d: slot %d of %d", i, sl, tsize)
			}
			if prev, ok := slotOf[s]; ok && prev != sl {
				t.Errorf("%q in slots %d and %d", s, prev, sl)
			}
			if o, ok := used[sl]; ok && o != s {
				t.Errorf("slot %d holds %q and %q", sl, o, s)
			}
			slotOf[s], used[sl] = sl, s
			if owner := mem[tableAt+8*sl]; owner == 0 || ss[owner-1] != s {
				t.Errorf("slot %d of %q holds %d", sl, s, owner)
			}
			if h := ptx.StrHash([]byte(s)) & uint64(tsize-1); (sl-h)&uint64(tsize-1) > uint64(n) {
				t.Errorf("%q in slot %d, its hash's %d", s, sl, h)
			}
		}
		taken := 0
		for i := range tsize {
			if mem[tableAt+uint64(8*i)] != 0 {
				taken++
			}
		}
		if taken != len(slotOf) {
			t.Errorf("%d strings: %d slots taken for %d distinct strings", n, taken, len(slotOf))
		}
	}
	if StrTableSize(0) != 4 || StrTableSize(700) != 2048 || StrTableSize(1024) != 4096 {
		t.Errorf("table sizes %d %d %d", StrTableSize(0), StrTableSize(700), StrTableSize(1024))
	}
}
