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
		{"h := unique.Make(\"x\")", "undefined: unique.Make ("},
		{"x := 1\nw := weak.Make(&x)", "undefined: weak.Make ("},
		{"n := rand.N(10)", "undefined: rand.N (the Go interpreter (yaegi) cannot run this generic function of the standard library: write rand.IntN(n)"},
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
