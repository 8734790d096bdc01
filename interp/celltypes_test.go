package interp

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// The same declarations, compiled here: the cells must print what these print.
type ctPoint struct {
	X, Y  int
	label string
}

type ctNode struct {
	Val  int
	Next *ctNode
	tags map[string]ctPoint
}

type ctUser struct {
	Name  string `json:"name"`
	Age   int
	token string
	note  string // the cell's has a json tag, which Go ignores on an unexported field (vet refuses it here)
}

type ctShown struct{ v int }

func (s ctShown) String() string { return fmt.Sprintf("shown(%d)", s.v) }

// TestCellTypeNames checks %+v, %#v and %T of cell struct types, and json.Marshal of their
// unexported fields, against the same code compiled.
func TestCellTypeNames(t *testing.T) {
	s := newSession(t)
	decls := `import (
	"encoding/json"
	"errors"
	"fmt"
)

type ctPoint struct {
	X, Y  int
	label string
}

type ctNode struct {
	Val  int
	Next *ctNode
	tags map[string]ctPoint
}

type ctUser struct {
	Name  string ` + "`json:\"name\"`" + `
	Age   int
	token string
	note  string ` + "`json:\"note\"`" + `
}

type ctShown struct{ v int }

func (s ctShown) String() string { return fmt.Sprintf("shown(%d)", s.v) }

type ctCelsius float64`
	if _, _, err := run(t, s, decls); err != nil {
		t.Fatal(err)
	}
	p := ctPoint{1, 2, "origin"}
	n := &ctNode{Val: 1, Next: &ctNode{Val: 2}, tags: map[string]ctPoint{"b": {3, 4, "x"}, "a": {5, 6, "y"}}}
	b, err := json.Marshal(ctUser{"ann", 31, "secret", "n"})
	var u ctUser
	uerr := json.Unmarshal([]byte(`{"name":"bo","Age":4,"token":"t","Xtoken":"x","note":"n"}`), &u)
	ind, _ := json.MarshalIndent([]*ctUser{&u}, "", " ")
	cases := []struct{ code, want string }{
		{`p := ctPoint{1, 2, "origin"}; fmt.Printf("%+v|%v|%T|%T\n", p, p, p, &p)`, fmt.Sprintf("%+v|%v|%T|%T\n", p, p, p, &p)},
		{`fmt.Println(fmt.Sprintf("%#v %+v", p, []ctPoint{p, {}}))`, fmt.Sprintf("%#v %+v\n", p, []ctPoint{p, {}})},
		{`n := &ctNode{Val: 1, Next: &ctNode{Val: 2}, tags: map[string]ctPoint{"b": {3, 4, "x"}, "a": {5, 6, "y"}}}
fmt.Printf("%+v %T\n", *n.Next, n.tags)`, fmt.Sprintf("%+v %T\n", *n.Next, n.tags)},
		{`fmt.Printf("%[2]T %[1]d %-12T|%v\n", 7, p, ctShown{3}, ctShown{4})`, fmt.Sprintf("%[2]T %[1]d %-12T|%v\n", 7, p, ctShown{3}, ctShown{4})},
		{`b, err := json.Marshal(ctUser{"ann", 31, "secret", "n"}); fmt.Println(string(b), err)`, fmt.Sprintln(string(b), err)},
		{"var u ctUser\nuerr := json.Unmarshal([]byte(`{\"name\":\"bo\",\"Age\":4,\"token\":\"t\",\"Xtoken\":\"x\",\"note\":\"n\"}`), &u)\nind, _ := json.MarshalIndent([]*ctUser{&u}, \"\", \" \")\nfmt.Printf(\"%+v %v %s\\n\", u, uerr, ind)", fmt.Sprintf("%+v %v %s\n", u, uerr, ind)},
		{`e := fmt.Errorf("bad point %+v", p); fmt.Println(e)`, fmt.Sprintln(fmt.Errorf("bad point %+v", p))},
		{`func show() { type local struct{ a, b int }; fmt.Printf("%+v %T\n", local{1, 2}, local{}) }
show()`, "{a:1 b:2} main.local\n"},
	}
	for _, c := range cases {
		_, out, err := run(t, s, c.code)
		if err != nil {
			t.Fatalf("%s: %v", c.code, err)
		}
		// Compiled here the types are interp.T; in a cell, as in go run, main.T.
		want := strings.ReplaceAll(c.want, "interp.", "main.")
		if got := out.out("stdout"); got != want {
			t.Errorf("%s:\n got %q\nwant %q", c.code, got, want)
		}
	}
	// Compiled named types are printed by fmt itself, even with interface fields; slices of
	// interfaces may hold cell values.
	if s.types.hasCell(reflect.TypeOf(fmt.Errorf("x: %w", errors.New("y")))) || !s.types.hasCell(reflect.TypeOf([]any{})) {
		t.Error("hasCell: a compiled error type would be printed by the registry, or []any would not")
	}
	// %T of a named non-struct type: its static type names it; in an interface, yaegi keeps
	// only float64, and the cell gets a note saying so.
	_, out, err := run(t, s, `fmt.Printf("%T\n", ctCelsius(3))`)
	if err != nil || out.out("stdout") != "main.ctCelsius\n" || out.out("stderr") != "" {
		t.Errorf("named float: stdout %q stderr %q, error %v", out.out("stdout"), out.out("stderr"), err)
	}
	_, out, err = run(t, s, "var anyC any = ctCelsius(3)\nfmt.Printf(\"%T\\n\", anyC)")
	if err != nil {
		t.Fatal(err)
	}
	if out.out("stdout") != "float64\n" || !strings.Contains(out.out("stderr"), "main.ctCelsius") {
		t.Errorf("named float in an interface: stdout %q stderr %q", out.out("stdout"), out.out("stderr"))
	}
}

type ctErr struct{ Code int }

func (e *ctErr) Error() string { return fmt.Sprintf("code %d", e.Code) }

// TestCellErrorTypes checks that a cell type with an Error method is an error to fmt (%v,
// Errorf's %w) and to errors.As and errors.Is, as compiled.
func TestCellErrorTypes(t *testing.T) {
	s := newSession(t)
	if _, _, err := run(t, s, `import (
	"errors"
	"fmt"
)

type ctErr struct{ Code int }

func (e *ctErr) Error() string { return fmt.Sprintf("code %d", e.Code) }

var sentinel error = &ctErr{9}

func do() error { return fmt.Errorf("wrapped: %w", &ctErr{7}) }`); err != nil {
		t.Fatal(err)
	}
	sentinel := error(&ctErr{9})
	do := func() error { return fmt.Errorf("wrapped: %w", &ctErr{7}) }
	var me *ctErr
	as := errors.As(do(), &me)
	want := fmt.Sprintln(&ctErr{1}, do(), as, me.Code, errors.Is(do(), sentinel), errors.Is(fmt.Errorf("x: %w", sentinel), sentinel), errors.Unwrap(do()))
	_, out, err := run(t, s, `var me *ctErr
as := errors.As(do(), &me)
fmt.Println(&ctErr{1}, do(), as, me.Code, errors.Is(do(), sentinel), errors.Is(fmt.Errorf("x: %w", sentinel), sentinel), errors.Unwrap(do()))`)
	if err != nil {
		t.Fatal(err)
	}
	if got := out.out("stdout"); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestPercentTOfNamedNonStructTypes: %T of a value of a named non-struct cell type prints its
// name, as go run does (yaegi gives such a value its underlying type at run time), whether the
// type, the value and the print are in one cell or in several.
func TestPercentTOfNamedNonStructTypes(t *testing.T) {
	s := newSession(t)
	for _, c := range []struct{ code, want string }{
		{"import \"fmt\"", ""},
		{"type Celsius float64", ""},
		{"type T struct{ S string }", ""},
		{"c := Celsius(3)\nvar cs []Celsius", ""},
		{"fmt.Printf(\"%T %T %v %T %[3]T\\n\", &T{\"x\"}, Celsius(3), Celsius(2), []Celsius{})", "*main.T main.Celsius 2 []main.Celsius main.Celsius\n"},
		{"fmt.Printf(\"%T %T %.1f\\n\", c, cs, c)", "main.Celsius []main.Celsius 3.0\n"},
		{"func show(x Celsius) string { return fmt.Sprintf(\"%T=%v\", x, x) }\nfmt.Println(show(4))", "main.Celsius=4\n"},
		{"var f float64 = 1\nfmt.Printf(\"%T\\n\", f)", "float64\n"},
	} {
		_, out, err := run(t, s, c.code)
		if err != nil || out.out("stdout") != c.want {
			t.Errorf("%q printed %q (stderr %q), want %q; error %v", c.code, out.out("stdout"), out.out("stderr"), c.want, err)
		}
	}
}
