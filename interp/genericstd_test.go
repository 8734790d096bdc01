package interp

import (
	"strings"
	"testing"
)

// TestGenericStdMissing checks that the generic standard library names cells cannot use are
// compile errors that name them, as go build would, and say what to write instead; and that
// their packages import (unique and weak have no compiled names at all).
func TestGenericStdMissing(t *testing.T) {
	s := newSession(t)
	if _, _, err := run(t, s, "import (\n\t\"iter\"\n\t\"maps\"\n\t\"math/rand/v2\"\n\t\"slices\"\n\t\"unique\"\n\t\"weak\"\n)"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ code, want string }{
		{"next, stop := iter.Pull(slices.Values([]int{1}))", "undefined: iter.Pull (the Go interpreter (yaegi) cannot run this generic function of the standard library: collect the values first"},
		{"n2, s2 := iter.Pull2(maps.All(map[int]int{}))", "undefined: iter.Pull2"},
		{"x := 1\nw := weak.Make(&x)", "undefined: weak.Make ("},
	} {
		_, _, err := run(t, s, c.code)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one with %q", c.code, err, c.want)
		}
	}
	_, out, err := run(t, s, "import \"fmt\"\nfmt.Println(rand.IntN(1))")
	if err != nil || out.out("stdout") != "0\n" {
		t.Errorf("rand.IntN after the errors: %q %v", out.out("stdout"), err)
	}
}

// TestConcatSpread: slices.Concat(parts...) with a lone spread argument (yaegi's compiler
// crashed on it) at a cell's top level, on an earlier cell's variable, and in a func.
func TestConcatSpread(t *testing.T) {
	s := newSession(t)
	for _, c := range []struct{ code, want string }{
		{"import (\n\t\"fmt\"\n\t\"slices\"\n)\nvar none [][]float64", ""},
		{"parts := [][]int{{1, 2}, {3}, {}, {4}}\nfmt.Println(slices.Concat(parts...), slices.Concat(none...) == nil)", "[1 2 3 4] true\n"},
		{"func words(ws ...[]string) []string { return slices.Concat(ws...) }\nfmt.Println(words([]string{\"a\"}, []string{\"b\", \"c\"}), len(words()))", "[a b c] 0\n"},
		{"fmt.Println(slices.Concat([]int{1}, []int{2}), slices.Concat(parts[1:]...))", "[1 2] [3 4]\n"},
	} {
		_, out, err := run(t, s, c.code)
		if err != nil || out.out("stdout") != c.want {
			t.Errorf("%q printed %q, want %q; error %v", c.code, out.out("stdout"), c.want, err)
		}
	}
}

// TestRandN: math/rand/v2's generic N on an untyped constant (int), a typed integer, a
// time.Duration (at a cell's top level, kept for the next cell) and explicit type arguments;
// n <= 0 panics as Go's does.
func TestRandN(t *testing.T) {
	s := newSession(t)
	for _, c := range []struct{ code, want string }{
		{"import (\n\t\"fmt\"\n\t\"math/rand/v2\"\n\t\"time\"\n)", ""},
		{"fmt.Println(rand.N(1), rand.N(uint8(1)), rand.N[int64](1))", "0 0 0\n"},
		{"d := rand.N(3 * time.Second)\nfmt.Printf(\"%T %v\\n\", d, d >= 0 && d < 3*time.Second)", "time.Duration true\n"},
		{"func roll() int { return rand.N(6) + 1 }\nok := true\nfor i := 0; i < 1000; i++ {\n\tif r := roll(); r < 1 || r > 6 {\n\t\tok = false\n\t}\n}\nfmt.Println(ok, d < 3*time.Second)", "true true\n"},
	} {
		_, out, err := run(t, s, c.code)
		if err != nil || out.out("stdout") != c.want {
			t.Errorf("%q printed %q, want %q; error %v", c.code, out.out("stdout"), c.want, err)
		}
	}
	if _, _, err := run(t, s, "rand.N(0)"); err == nil || !strings.Contains(err.Error(), "invalid argument to N") {
		t.Errorf("rand.N(0): error %v, want Go's panic", err)
	}
}

// TestUniqueMake: unique.Make gives equal handles for equal values (strings, constants, a
// cell's struct type) and Value gives the value back, in a func, at a cell's top level and in
// a signature (unique.Handle[T]).
func TestUniqueMake(t *testing.T) {
	s := newSession(t)
	for _, c := range []struct{ code, want string }{
		{"import (\n\t\"fmt\"\n\t\"unique\"\n)\ntype point struct{ X, Y int }", ""},
		{"a := unique.Make(\"gpu\")\nb := unique.Make(\"g\" + \"pu\")\nfmt.Println(a == b, a == unique.Make(\"cpu\"), a.Value())", "true false gpu\n"},
		{"func handles(xs ...point) []unique.Handle[point] {\n\tvar hs []unique.Handle[point]\n\tfor _, x := range xs {\n\t\ths = append(hs, unique.Make(x))\n\t}\n\treturn hs\n}", ""},
		{"hs := handles(point{1, 2}, point{3, 4}, point{1, 2})\nfmt.Println(hs[0] == hs[2], hs[0] == hs[1], hs[1].Value().Y)", "true false 4\n"},
		{"fmt.Println(unique.Make(7).Value() * 6)", "42\n"},
	} {
		_, out, err := run(t, s, c.code)
		if err != nil || out.out("stdout") != c.want {
			t.Errorf("%q printed %q, want %q; error %v", c.code, out.out("stdout"), c.want, err)
		}
	}
	if _, _, err := run(t, s, "func bad() { _ = unique.Make([]int{1}) }\nbad()"); err == nil || !strings.Contains(err.Error(), "not comparable") {
		t.Errorf("unique.Make of a slice: error %v, want one saying it is not comparable", err)
	}
}
