package dataframe

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// Expr is a column expression: a column (Col), a literal (Lit), or an operation on them. It is
// evaluated against a frame when the frame is computed; its numeric, bool and datetime parts
// are gpuarray expressions, so they fuse into one pass per partition (one kernel on a GPU).
// Nulls propagate: an operation's result is null where an input is.
type Expr struct {
	kind string // "col", "lit", "bin", "un", "str", "dt", "cast", "fill", "isnull", "where"
	name string // column name, operator or function
	args []*Expr
	lit  any
	sarg []any
	dt   DType
}

// Col is the column name of the frame the expression is evaluated against.
func Col(name string) *Expr { return &Expr{kind: "col", name: name} }

// Lit is a constant: a Go number, bool, string or time.Time.
func Lit(v any) *Expr { return &Expr{kind: "lit", lit: v} }

func toExpr(v any) *Expr {
	if e, ok := v.(*Expr); ok {
		return e
	}
	return Lit(v)
}

func (e *Expr) bin(op string, v any) *Expr {
	return &Expr{kind: "bin", name: op, args: []*Expr{e, toExpr(v)}}
}

// Add is e + v (v an Expr or a constant); Sub, Mul, Div, FloorDiv, Mod and Pow likewise.
func (e *Expr) Add(v any) *Expr { return e.bin("add", v) }

// Sub is e - v.
func (e *Expr) Sub(v any) *Expr { return e.bin("sub", v) }

// Mul is e * v.
func (e *Expr) Mul(v any) *Expr { return e.bin("mul", v) }

// Div is e / v (true division).
func (e *Expr) Div(v any) *Expr { return e.bin("div", v) }

// FloorDiv is e // v.
func (e *Expr) FloorDiv(v any) *Expr { return e.bin("floordiv", v) }

// Mod is e % v (Python's sign rule).
func (e *Expr) Mod(v any) *Expr { return e.bin("mod", v) }

// Pow is e ** v.
func (e *Expr) Pow(v any) *Expr { return e.bin("pow", v) }

// Eq is e == v; for string and categorical columns v is a string. Ne, Lt, Le, Gt, Ge likewise.
func (e *Expr) Eq(v any) *Expr { return e.bin("eq", v) }

// Ne is e != v.
func (e *Expr) Ne(v any) *Expr { return e.bin("ne", v) }

// Lt is e < v.
func (e *Expr) Lt(v any) *Expr { return e.bin("lt", v) }

// Le is e <= v.
func (e *Expr) Le(v any) *Expr { return e.bin("le", v) }

// Gt is e > v.
func (e *Expr) Gt(v any) *Expr { return e.bin("gt", v) }

// Ge is e >= v.
func (e *Expr) Ge(v any) *Expr { return e.bin("ge", v) }

// And is the logical e & v of bools.
func (e *Expr) And(v any) *Expr { return e.bin("and", v) }

// Or is the logical e | v of bools.
func (e *Expr) Or(v any) *Expr { return e.bin("or", v) }

// Not is the logical ~e of a bool.
func (e *Expr) Not() *Expr { return &Expr{kind: "un", name: "not", args: []*Expr{e}} }

// Neg is -e.
func (e *Expr) Neg() *Expr { return &Expr{kind: "un", name: "neg", args: []*Expr{e}} }

// Abs is |e|.
func (e *Expr) Abs() *Expr { return &Expr{kind: "un", name: "abs", args: []*Expr{e}} }

// IsNull is true where e is null (NaN counts as null for floats, as pandas' isna).
func (e *Expr) IsNull() *Expr { return &Expr{kind: "isnull", args: []*Expr{e}} }

// NotNull is IsNull().Not().
func (e *Expr) NotNull() *Expr { return e.IsNull().Not() }

// FillNA is e with its nulls (and NaNs) replaced by v.
func (e *Expr) FillNA(v any) *Expr { return &Expr{kind: "fill", args: []*Expr{e}, lit: v} }

// Where is e where cond is true, else other (nil: null), as pandas' Series.where.
func (e *Expr) Where(cond *Expr, other any) *Expr {
	w := &Expr{kind: "where", args: []*Expr{cond, e}}
	if other != nil {
		w.args = append(w.args, toExpr(other))
	}
	return w
}

// AsType converts e to dt (numeric to numeric, string to category and back, datetime to
// int64 and back).
func (e *Expr) AsType(dt DType) *Expr { return &Expr{kind: "cast", args: []*Expr{e}, dt: dt} }

func (e *Expr) dtPart(part string) *Expr { return &Expr{kind: "dt", name: part, args: []*Expr{e}} }

// Year is the year of a datetime; Month (1-12), Day (1-31), Hour, Minute, Second and Weekday
// (Monday 0, as pandas) likewise.
func (e *Expr) Year() *Expr { return e.dtPart("year") }

// Month is the month (1-12) of a datetime.
func (e *Expr) Month() *Expr { return e.dtPart("month") }

// Day is the day of the month (1-31) of a datetime.
func (e *Expr) Day() *Expr { return e.dtPart("day") }

// Hour is the hour (0-23) of a datetime.
func (e *Expr) Hour() *Expr { return e.dtPart("hour") }

// Minute is the minute (0-59) of a datetime.
func (e *Expr) Minute() *Expr { return e.dtPart("minute") }

// Second is the second (0-59) of a datetime.
func (e *Expr) Second() *Expr { return e.dtPart("second") }

// Weekday is the day of the week of a datetime, Monday 0 to Sunday 6.
func (e *Expr) Weekday() *Expr { return e.dtPart("weekday") }

func (e *Expr) str(fn string, args ...any) *Expr {
	return &Expr{kind: "str", name: fn, args: []*Expr{e}, sarg: args}
}

// StrLen is the length in code points of a string (pandas' str.len).
func (e *Expr) StrLen() *Expr { return e.str("len") }

// Contains is whether a string contains sub (literally, not a pattern).
func (e *Expr) Contains(sub string) *Expr { return e.str("contains", sub) }

// StartsWith is whether a string starts with prefix.
func (e *Expr) StartsWith(prefix string) *Expr { return e.str("startswith", prefix) }

// EndsWith is whether a string ends with suffix.
func (e *Expr) EndsWith(suffix string) *Expr { return e.str("endswith", suffix) }

// Lower is a string in lower case.
func (e *Expr) Lower() *Expr { return e.str("lower") }

// Upper is a string in upper case.
func (e *Expr) Upper() *Expr { return e.str("upper") }

// StrSlice is s[start:stop] of a string over code points (Python's rules for negative
// indices).
func (e *Expr) StrSlice(start, stop int) *Expr { return e.str("slice", start, stop) }

// SplitPart is part i of a string split at sep (pandas' str.split(sep).str[i]); null where
// the string has no part i.
func (e *Expr) SplitPart(sep string, i int) *Expr { return e.str("split", sep, i) }

// ToCategory dictionary-encodes a string column (pandas' astype("category")).
func (e *Expr) ToCategory() *Expr { return e.AsType(Category) }

// String renders the expression.
func (e *Expr) String() string {
	switch e.kind {
	case "col":
		return fmt.Sprintf("col(%q)", e.name)
	case "lit":
		return fmt.Sprintf("%#v", e.lit)
	case "bin":
		return fmt.Sprintf("(%v %s %v)", e.args[0], e.name, e.args[1])
	case "cast":
		return fmt.Sprintf("%v.astype(%s)", e.args[0], e.dt)
	case "fill":
		return fmt.Sprintf("%v.fillna(%v)", e.args[0], e.lit)
	case "where":
		return fmt.Sprintf("%v.where(%v)", e.args[1], e.args[0])
	case "isnull":
		return fmt.Sprintf("%v.isna()", e.args[0])
	}
	return fmt.Sprintf("%v.%s%v", e.args[0], e.name, e.sarg)
}

// columns appends the column names e reads.
func (e *Expr) columns(out []string) []string {
	if e.kind == "col" {
		return append(out, e.name)
	}
	for _, a := range e.args {
		out = a.columns(out)
	}
	return out
}

// typeOf checks e against fields and returns its type.
func (e *Expr) typeOf(fields []Field) (DType, error) {
	switch e.kind {
	case "col":
		for _, f := range fields {
			if f.Name == e.name {
				return f.DType, nil
			}
		}
		names := make([]string, len(fields))
		for i, f := range fields {
			names[i] = f.Name
		}
		return "", missing(e.name, names)
	case "lit":
		return litType(e.lit)
	}
	ts := make([]DType, len(e.args))
	for i, a := range e.args {
		t, err := a.typeOf(fields)
		if err != nil {
			return "", err
		}
		ts[i] = t
	}
	switch e.kind {
	case "bin":
		return binType(e.name, ts[0], ts[1], e.args[1])
	case "un":
		if e.name == "not" && ts[0] != Bool {
			return "", fmt.Errorf("%v: not of %s, want bool", e, ts[0])
		}
		if e.name != "not" && !ts[0].IsNumeric() {
			return "", fmt.Errorf("%v: %s of %s, want a number", e, e.name, ts[0])
		}
		return ts[0], nil
	case "isnull":
		return Bool, nil
	case "fill":
		return ts[0], nil
	case "where":
		if ts[0] != Bool {
			return "", fmt.Errorf("%v: condition is %s, want bool", e, ts[0])
		}
		if len(ts) == 3 && ts[1] != ts[2] && !(ts[1].IsNumeric() && ts[2].IsNumeric()) {
			return "", fmt.Errorf("%v: values are %s and %s", e, ts[1], ts[2])
		}
		return ts[1], nil
	case "cast":
		return castType(ts[0], e.dt)
	case "dt":
		if !ts[0].IsDatetime() {
			return "", fmt.Errorf("%v: %s of %s, want a datetime", e, e.name, ts[0])
		}
		return Int32, nil
	case "str":
		if ts[0] != String && ts[0] != Category {
			return "", fmt.Errorf("%v: str.%s of %s, want string or category", e, e.name, ts[0])
		}
		switch e.name {
		case "len":
			return Int64, nil
		case "contains", "startswith", "endswith":
			return Bool, nil
		}
		return String, nil
	}
	return "", fmt.Errorf("unknown expression %v", e)
}

func litType(v any) (DType, error) {
	switch v.(type) {
	case int, int64, int32, uint8, uint32, uint64:
		return Int64, nil
	case float64, float32:
		return Float64, nil
	case bool:
		return Bool, nil
	case string:
		return String, nil
	case time.Time:
		return DatetimeUS, nil
	}
	return "", fmt.Errorf("a constant of Go type %T (want a number, bool, string or time.Time)", v)
}

func binType(op string, a, b DType, rhs *Expr) (DType, error) {
	cmp := op == "eq" || op == "ne" || op == "lt" || op == "le" || op == "gt" || op == "ge"
	switch {
	case a == String || a == Category:
		if (op == "eq" || op == "ne") && rhs.kind == "lit" && b == String {
			return Bool, nil
		}
		return "", fmt.Errorf("%s of %s and %s: strings compare (eq, ne) with a string constant only", op, a, b)
	case op == "and" || op == "or":
		if a != Bool || b != Bool {
			return "", fmt.Errorf("%s of %s and %s, want bool and bool", op, a, b)
		}
		return Bool, nil
	case a.IsDatetime():
		if cmp && (b.IsDatetime() || b.IsInteger()) {
			return Bool, nil
		}
		if op == "sub" && b.IsDatetime() {
			return Int64, nil
		}
		if (op == "add" || op == "sub") && b.IsInteger() {
			return a, nil
		}
		return "", fmt.Errorf("%s of %s and %s", op, a, b)
	case (a.IsNumeric() || a == Bool) && (b.IsNumeric() || b == Bool):
		if cmp {
			return Bool, nil
		}
		x, _ := a.array()
		y, _ := b.array()
		if rhs.kind == "lit" {
			y = x
			if b.IsFloat() && !a.IsFloat() {
				y = gpuarray.Float64
			}
		}
		r := dtype.Promote(x, y)
		if op == "div" && !r.IsFloat() {
			r = gpuarray.Float64
		}
		return dtypeOfArray(r)
	}
	return "", fmt.Errorf("%s of %s and %s", op, a, b)
}

func castType(from, to DType) (DType, error) {
	if _, err := ParseDType(string(to)); err != nil {
		return "", err
	}
	ok := from == to ||
		((from.IsNumeric() || from == Bool) && (to.IsNumeric() || to == Bool)) ||
		(from == String && to == Category) || (from == Category && to == String) ||
		((from == String || from == Category) && to.IsNumeric()) ||
		(from.IsDatetime() && (to == Int64 || to.IsDatetime())) || (from == Int64 && to.IsDatetime())
	if !ok {
		return "", fmt.Errorf("cannot convert %s to %s", from, to)
	}
	return to, nil
}

func (e *Expr) tickLit(v any, dt DType) any {
	if t, ok := v.(time.Time); ok {
		return t.UnixNano() / (1e9 / dt.unitTicks())
	}
	return v
}

// nulls combines validity arrays (nil: no nulls).
func andValid(vs ...*gpuarray.Array) *gpuarray.Array {
	var out *gpuarray.Array
	for _, v := range vs {
		if v == nil {
			continue
		}
		if out == nil {
			out = v
		} else {
			out = gpuarray.LogicalAnd(out, v)
		}
	}
	return out
}

var binOps = map[string]func(x *gpuarray.Array, v any) *gpuarray.Array{
	"add": (*gpuarray.Array).Add, "sub": (*gpuarray.Array).Sub, "mul": (*gpuarray.Array).Mul,
	"div": (*gpuarray.Array).Div, "pow": (*gpuarray.Array).Pow,
	"eq": (*gpuarray.Array).Eq, "ne": (*gpuarray.Array).Ne, "lt": (*gpuarray.Array).Lt,
	"le": (*gpuarray.Array).Le, "gt": (*gpuarray.Array).Gt, "ge": (*gpuarray.Array).Ge,
	"floordiv": func(x *gpuarray.Array, v any) *gpuarray.Array { return gpuarray.FloorDivide(x, v) },
	"mod":      func(x *gpuarray.Array, v any) *gpuarray.Array { return gpuarray.Remainder(x, v) },
	"and":      func(x *gpuarray.Array, v any) *gpuarray.Array { return gpuarray.LogicalAnd(x, v) },
	"or":       func(x *gpuarray.Array, v any) *gpuarray.Array { return gpuarray.LogicalOr(x, v) },
}

// eval evaluates e over t; a literal gives a column of one value broadcast to t's rows.
func (e *Expr) eval(rc *runCtx, t *table) (*column, error) {
	switch e.kind {
	case "col":
		return t.find(e.name)
	case "lit":
		dt, err := litType(e.lit)
		if err != nil {
			return nil, err
		}
		switch v := e.lit.(type) {
		case string:
			h := heapOf([]string{v})
			return &column{dt: String, arr: t.rows.Mul(0), heap: h}, nil
		case time.Time:
			return &column{dt: dt, arr: gpuarray.Where(t.rows.Ge(0), e.tickLit(v, dt), 0).AsType(gpuarray.Int64)}, nil
		}
		adt, _ := dt.array()
		return &column{dt: dt, arr: gpuarray.Where(t.rows.Ge(0), e.lit, e.lit).AsType(adt)}, nil
	}
	fields := make([]Field, len(t.cols))
	for i, c := range t.cols {
		fields[i] = Field{c.name, c.dt}
	}
	rt, err := e.typeOf(fields)
	if err != nil {
		return nil, err
	}
	x, err := e.args[0].eval(rc, t)
	if err != nil {
		return nil, err
	}
	out := &column{dt: rt}
	switch e.kind {
	case "bin":
		if x.dt == String || x.dt == Category {
			return strCompare(rc, e.name, x, e.args[1].lit.(string))
		}
		f := binOps[e.name]
		if e.args[1].kind == "lit" {
			out.arr = f(x.arr, e.tickLit(e.args[1].lit, x.dt))
			out.valid = x.valid
		} else {
			y, err := e.args[1].eval(rc, t)
			if err != nil {
				return nil, err
			}
			out.arr = f(x.arr, y.arr)
			out.valid = andValid(x.valid, y.valid)
		}
	case "un":
		switch e.name {
		case "not":
			out.arr = gpuarray.LogicalNot(x.arr)
		case "neg":
			out.arr = x.arr.Neg()
		case "abs":
			out.arr = x.arr.Abs()
		}
		out.valid = x.valid
	case "isnull":
		out.arr = nullMask(x)
	case "fill":
		return fillNA(x, e.lit)
	case "where":
		v, err := e.args[1].eval(rc, t)
		if err != nil {
			return nil, err
		}
		cond := x.arr
		if x.valid != nil {
			cond = gpuarray.LogicalAnd(cond, x.valid)
		}
		if v.dt == String || v.dt == Category {
			return nil, fmt.Errorf("%v: where on %s columns is not supported; filter instead", e, v.dt)
		}
		out.dt = v.dt
		if len(e.args) == 3 {
			o, err := e.args[2].eval(rc, t)
			if err != nil {
				return nil, err
			}
			out.arr = gpuarray.Where(cond, v.arr, o.arr)
			if v.valid != nil || o.valid != nil {
				out.valid = gpuarray.Where(cond, validOr(v), validOr(o))
			}
		} else {
			out.arr = v.arr
			out.valid = andValid(cond, v.valid)
		}
	case "cast":
		return castColumn(rc, x, e.dt)
	case "dt":
		out.arr = datePart(x.arr, x.dt, e.name)
		out.valid = x.valid
	case "str":
		return strFunc(rc, e, x)
	}
	if out.arr != nil {
		if err := out.arr.Err(); err != nil {
			return nil, fmt.Errorf("%v: %w", e, err)
		}
	}
	return out, nil
}

func validOr(c *column) any {
	if c.valid == nil {
		return true
	}
	return c.valid
}

// nullMask is true where c is null or NaN.
func nullMask(c *column) *gpuarray.Array {
	var m *gpuarray.Array
	if c.valid != nil {
		m = gpuarray.LogicalNot(c.valid)
	}
	if c.dt.IsFloat() {
		n := gpuarray.IsNaN(c.arr)
		if m == nil {
			m = n
		} else {
			m = gpuarray.LogicalOr(m, n)
		}
	}
	if m == nil {
		m = c.arr.Ne(c.arr) // false everywhere, in c's layout
		if c.dt.IsFloat() {
			m = gpuarray.IsNaN(c.arr)
		}
	}
	return m
}

// present is true where c is neither null nor NaN (nil: everywhere).
func present(c *column) *gpuarray.Array {
	if c.valid == nil && !c.dt.IsFloat() {
		return nil
	}
	return gpuarray.LogicalNot(nullMask(c))
}

func fillNA(x *column, v any) (*column, error) {
	out := &column{name: x.name, dt: x.dt}
	switch x.dt {
	case String, Category:
		s, ok := v.(string)
		if !ok {
			return nil, fmt.Errorf("fillna of a %s column with a %T, want a string", x.dt, v)
		}
		if x.valid == nil {
			return x, nil
		}
		if x.dt == Category {
			// The fill value joins the dictionary when it is new.
			codes, dict := x.heap.encode()
			_ = codes
			at := int64(-1)
			for i := 0; i < dict.len(); i++ {
				if dict.at(int64(i)) == s {
					at = int64(i)
				}
			}
			h := x.heap
			if at < 0 {
				h = newHeap(x.heap.len() + 1)
				for i := 0; i < x.heap.len(); i++ {
					h.add(x.heap.at(int64(i)))
				}
				at = int64(h.len())
				h.add(s)
			}
			out.heap = h
			out.arr = gpuarray.Where(x.valid, x.arr, at).AsType(gpuarray.Int32)
			return out, nil
		}
		h := newHeap(x.heap.len() + 1)
		h.offsets = append(h.offsets[:0], x.heap.offsets...)
		h.data = x.heap.data
		at := int64(h.len())
		h.add(s)
		out.heap = h
		out.arr = gpuarray.Where(x.valid, x.arr, at)
		return out, nil
	}
	if _, ok := v.(string); ok {
		return nil, fmt.Errorf("fillna of a %s column with a string", x.dt)
	}
	p := present(x)
	if p == nil {
		return x, nil
	}
	adt, _ := x.dt.array()
	out.arr = gpuarray.Where(p, x.arr, v).AsType(adt)
	return out, out.arr.Err()
}

// datePart computes a calendar field of datetime ticks with integer arithmetic (the civil
// calendar from days since the epoch), so it fuses and runs where the array runs.
func datePart(ticks *gpuarray.Array, dt DType, part string) *gpuarray.Array {
	perSec := dt.unitTicks()
	secs := gpuarray.FloorDivide(ticks, perSec)
	switch part {
	case "hour":
		return gpuarray.Remainder(gpuarray.FloorDivide(secs, 3600), 24).AsType(gpuarray.Int32)
	case "minute":
		return gpuarray.Remainder(gpuarray.FloorDivide(secs, 60), 60).AsType(gpuarray.Int32)
	case "second":
		return gpuarray.Remainder(secs, 60).AsType(gpuarray.Int32)
	}
	days := gpuarray.FloorDivide(secs, 86400)
	if part == "weekday" {
		return gpuarray.Remainder(days.Add(3), 7).AsType(gpuarray.Int32)
	}
	z := days.Add(719468)
	era := gpuarray.FloorDivide(z, 146097)
	doe := z.Sub(era.Mul(146097))
	yoe := gpuarray.FloorDivide(doe.Sub(gpuarray.FloorDivide(doe, 1460)).Add(gpuarray.FloorDivide(doe, 36524)).Sub(gpuarray.FloorDivide(doe, 146096)), 365)
	doy := doe.Sub(yoe.Mul(365).Add(gpuarray.FloorDivide(yoe, 4)).Sub(gpuarray.FloorDivide(yoe, 100)))
	mp := gpuarray.FloorDivide(doy.Mul(5).Add(2), 153)
	switch part {
	case "day":
		return doy.Sub(gpuarray.FloorDivide(mp.Mul(153).Add(2), 5)).Add(1).AsType(gpuarray.Int32)
	case "month":
		return gpuarray.Where(mp.Lt(10), mp.Add(3), mp.Sub(9)).AsType(gpuarray.Int32)
	}
	y := yoe.Add(era.Mul(400))
	return gpuarray.Where(mp.Ge(10), y.Add(1), y).AsType(gpuarray.Int32)
}

// strCompare is a string column == or != a constant: compared once per distinct heap entry
// on the host, then gathered per row by the array engine.
func strCompare(rc *runCtx, op string, x *column, s string) (*column, error) {
	if arr, ok, err := strMatchGPU(rc, "eq", s, x); ok {
		if err != nil {
			return nil, err
		}
		if op != "eq" {
			arr = gpuarray.LogicalNot(arr)
		}
		return &column{dt: Bool, arr: arr, valid: x.valid}, nil
	}
	rc.host("string %s compared on the host (%d strings), gathered per row", op, x.heap.len())
	r := make([]bool, x.heap.len())
	for i := range r {
		r[i] = (x.heap.at(int64(i)) == s) == (op == "eq")
	}
	arr, err := gather(rc, dtype.OfBool(r), x.arr)
	if err != nil {
		return nil, err
	}
	return &column{dt: Bool, arr: arr, valid: x.valid}, nil
}

// gather returns per-heap values at the rows' positions (codes), resolving the positions'
// length first when a filter left it unknown.
func gather(rc *runCtx, perHeap dtype.Slice, pos *gpuarray.Array) (*gpuarray.Array, error) {
	if len(pos.Shape()) == 1 && pos.Shape()[0] < 0 {
		rc.host("filtered string positions resolved before a string function (the mask computed once more)")
		p, err := pos.ComputeChunkSizes(rc.opts...)
		if err != nil {
			return nil, err
		}
		pos = p
	}
	return gpuarray.Take(gpuarray.WrapValues(perHeap), pos, 0), nil
}

func strFunc(rc *runCtx, e *Expr, x *column) (*column, error) {
	h := x.heap
	n := h.len()
	out := &column{valid: x.valid}
	switch e.name {
	case "len", "contains", "startswith", "endswith":
		lit := ""
		if e.name != "len" {
			lit = e.sarg[0].(string)
		}
		if arr, ok, err := strMatchGPU(rc, e.name, lit, x); ok {
			if err != nil {
				return nil, err
			}
			out.dt, out.arr = Bool, arr
			if e.name == "len" {
				out.dt = Int64
			}
			return out, nil
		}
	}
	rc.host("str.%s on the host over %d strings", e.name, n)
	var perHeap dtype.Slice
	switch e.name {
	case "len":
		r := make([]int64, n)
		for i := range r {
			r[i] = int64(len([]rune(h.at(int64(i)))))
		}
		out.dt, perHeap = Int64, dtype.OfInt64(r)
	case "contains", "startswith", "endswith":
		sub := e.sarg[0].(string)
		f := map[string]func(string, string) bool{"contains": strings.Contains, "startswith": strings.HasPrefix, "endswith": strings.HasSuffix}[e.name]
		r := make([]bool, n)
		for i := range r {
			r[i] = f(h.at(int64(i)), sub)
		}
		out.dt, perHeap = Bool, dtype.OfBool(r)
	case "lower", "upper", "slice":
		var f func(string) string
		switch e.name {
		case "lower":
			f = strings.ToLower
		case "upper":
			f = strings.ToUpper
		default:
			lo, hi := e.sarg[0].(int), e.sarg[1].(int)
			f = func(s string) string { return sliceRunes(s, lo, hi, true) }
		}
		out.dt, out.heap = String, h.mapStrings(f)
		out.arr = x.arr.AsType(gpuarray.Int64)
		return out, nil
	case "split":
		sep, i := e.sarg[0].(string), e.sarg[1].(int)
		nh := newHeap(n)
		ok := make([]bool, n)
		for k := 0; k < n; k++ {
			p, has := splitPart(h.at(int64(k)), sep, i)
			nh.add(p)
			ok[k] = has
		}
		out.dt, out.heap = String, nh
		out.arr = x.arr.AsType(gpuarray.Int64)
		if !allTrue(ok) {
			v, err := gather(rc, dtype.OfBool(ok), x.arr)
			if err != nil {
				return nil, err
			}
			out.valid = andValid(x.valid, v)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unknown string function %q", e.name)
	}
	arr, err := gather(rc, perHeap, x.arr)
	if err != nil {
		return nil, err
	}
	out.arr = arr
	return out, nil
}

func castColumn(rc *runCtx, x *column, to DType) (*column, error) {
	if _, err := castType(x.dt, to); err != nil {
		return nil, err
	}
	out := &column{name: x.name, dt: to, valid: x.valid}
	switch {
	case x.dt == to:
		return x, nil
	case x.dt == String && to == Category:
		rc.host("string to category: dictionary built on the host over %d strings", x.heap.len())
		codes, dict := x.heap.encode()
		arr, err := gather(rc, dtype.OfInt64(codes), x.arr)
		if err != nil {
			return nil, err
		}
		out.arr, out.heap = arr.AsType(gpuarray.Int32), dict
	case (x.dt == String || x.dt == Category) && to.IsNumeric():
		// Parsed once per distinct heap entry on the host; a string that is not a number
		// becomes null.
		rc.host("string to %s: parsed on the host (%d strings)", to, x.heap.len())
		n := x.heap.len()
		vals := make([]float64, n)
		ok := make([]bool, n)
		for i := range vals {
			s := strings.TrimSpace(x.heap.at(int64(i)))
			if to.IsInteger() {
				v, err := strconv.ParseInt(s, 10, 64)
				vals[i], ok[i] = float64(v), err == nil
			} else {
				v, err := strconv.ParseFloat(s, 64)
				vals[i], ok[i] = v, err == nil
			}
		}
		adt, _ := to.array()
		pos := x.arr
		if x.dt == Category {
			pos = x.arr.AsType(gpuarray.Int64)
		}
		arr, err := gather(rc, dtype.Convert(dtype.OfFloat64(vals), adt), pos)
		if err != nil {
			return nil, err
		}
		out.arr = arr
		if !allTrue(ok) {
			v, err := gather(rc, dtype.OfBool(ok), pos)
			if err != nil {
				return nil, err
			}
			out.valid = andValid(x.valid, v)
		}
	case x.dt == Category && to == String:
		out.arr, out.heap = x.arr.AsType(gpuarray.Int64), x.heap
	case x.dt.IsDatetime() && to.IsDatetime():
		a, b := x.dt.unitTicks(), to.unitTicks()
		if b >= a {
			out.arr = x.arr.Mul(b / a)
		} else {
			out.arr = gpuarray.FloorDivide(x.arr, a/b)
		}
	default:
		adt, _ := to.array()
		out.arr = x.arr.AsType(adt)
	}
	return out, out.arr.Err()
}
