package gpuarray

import (
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"html"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// Kernel is an elementwise function defined by Elementwise from an expression over named
// inputs (CuPy's ElementwiseKernel, but portable). Apply builds the expression from
// gpuarray's own operations, so it fuses with the graph around it and runs wherever they
// run: the CPU, GPUs and cluster workers.
type Kernel struct {
	inputs []string
	types  []DType // per input; invalid: untyped
	src    string
	tree   ast.Expr
}

// kernelFunc is a function an expression may call: its arity (-1: any of min..max) and how
// it applies to operands (*Array or Go numbers).
type kernelFunc struct {
	arity int
	apply func(args []any) *Array
}

// kernelFuncs maps the names an expression may call (Array API names) to operations: the
// first ops (coreNames), every op of the table (gpuarray/optable) by its name, where and clip.
var kernelFuncs = func() map[string]kernelFunc {
	m := map[string]kernelFunc{
		"where": {3, func(a []any) *Array { return Where(a[0], a[1], a[2]) }},
		"clip":  {3, func(a []any) *Array { return Clip(a[0], a[1], a[2]) }},
	}
	un := func(op expr.Op) kernelFunc {
		return kernelFunc{1, func(a []any) *Array { return unaryOf(op, a[0]) }}
	}
	bin := func(op expr.Op) kernelFunc {
		return kernelFunc{2, func(a []any) *Array { return binaryOf(op, a[0], a[1]) }}
	}
	for name, op := range coreNames {
		if op.Unary() {
			m[name] = un(op)
		} else {
			m[name] = bin(op)
		}
	}
	// The table's ops, found by their names, so that a new row is callable here at once.
	for o := expr.OpGe + 1; o < math.MaxUint8; o++ {
		name := o.String()
		if strings.HasPrefix(name, "op(") {
			continue
		}
		if o.Unary() {
			m[name] = un(o)
		} else {
			m[name] = bin(o)
		}
	}
	return m
}()

// kernelConsts are the names of constants an expression may use.
var kernelConsts = map[string]any{
	"pi": math.Pi, "e": math.E, "inf": math.Inf(1), "nan": math.NaN(), "true": true, "false": false,
}

// kernelBinary maps Go's binary operators to operations; && and || are logical_and and
// logical_or (both sides are evaluated: elementwise code has no short circuit).
var kernelBinary = map[token.Token]expr.Op{
	token.ADD: expr.OpAdd, token.SUB: expr.OpSub, token.MUL: expr.OpMul, token.QUO: expr.OpDiv,
	token.REM: expr.OpRemainder, token.EQL: expr.OpEq, token.NEQ: expr.OpNe, token.LSS: expr.OpLt,
	token.LEQ: expr.OpLe, token.GTR: expr.OpGt, token.GEQ: expr.OpGe,
	token.LAND: expr.OpLogicalAnd, token.LOR: expr.OpLogicalOr, token.AND: expr.OpBitwiseAnd,
	token.OR: expr.OpBitwiseOr, token.XOR: expr.OpBitwiseXor, token.SHL: expr.OpBitwiseLeftShift,
	token.SHR: expr.OpBitwiseRightShift,
}

// Elementwise defines an elementwise function from an expression over named inputs, e.g.
//
//	k, err := gpuarray.Elementwise("x, y", "where(x > 0, sqrt(x) * y, -y)")
//	z := k.Apply(a, b)
//
// inputs is a comma-separated list of names, each with an optional dtype before it as in
// CuPy ("float32 x, y"): a typed input is converted to that dtype (AsType's rules; a number
// becomes a 0-d array of it), an untyped one is taken as it is. The expression is Go syntax: numbers, the
// operators + - * / % (Python's remainder), comparisons, && || ! (logical), & | ^ << >>
// (bitwise), the constants pi, e, inf, nan, true and false, and calls of elementwise functions
// by their Array API names: abs, sqrt, exp, log, sin, cos, tanh, pow, maximum, minimum,
// atan2, log1p, hypot, floor, isnan, … (Functions lists them), where(cond, x, y) and
// clip(x, lo, hi). Dtypes follow the operations' own rules (numbers are weak scalars).
// A bad expression is an error here, naming its position and what was wrong.
func Elementwise(inputs, expression string) (*Kernel, error) {
	k := &Kernel{src: expression}
	seen := map[string]bool{}
	if strings.TrimSpace(inputs) != "" {
		for i, item := range strings.Split(inputs, ",") {
			name, typ := strings.TrimSpace(item), DType(255)
			if f := strings.Fields(item); len(f) == 2 {
				dt, _, err := dtype.Parse(f[0])
				if err != nil {
					return nil, fmt.Errorf("elementwise: input %d (%q): %w", i+1, strings.TrimSpace(item), err)
				}
				name, typ = f[1], dt
			}
			switch {
			case !token.IsIdentifier(name):
				return nil, fmt.Errorf("elementwise: input %d (%q) is not a name", i+1, name)
			case seen[name]:
				return nil, fmt.Errorf("elementwise: input %q is named twice", name)
			case kernelConsts[name] != nil:
				return nil, fmt.Errorf("elementwise: input %q hides the constant of that name", name)
			}
			if _, ok := kernelFuncs[name]; ok {
				return nil, fmt.Errorf("elementwise: input %q hides the function of that name", name)
			}
			seen[name] = true
			k.inputs = append(k.inputs, name)
			k.types = append(k.types, typ)
		}
	}
	tree, err := parser.ParseExpr(expression)
	if err != nil {
		var list scanner.ErrorList
		if errors.As(err, &list) && len(list) > 0 {
			// ParseExpr reads the text as a line: its end is "newline" to the scanner.
			msg := list[0].Msg
			if strings.Contains(msg, " before newline") || list[0].Pos.Offset >= len(expression) {
				msg = "unexpected end of expression: " + strings.ReplaceAll(msg, " before newline", "")
			}
			return nil, fmt.Errorf("elementwise: %s", kernelPos(expression, list[0].Pos.Offset, msg))
		}
		return nil, fmt.Errorf("elementwise: %w", err)
	}
	k.tree = tree
	if err := k.check(tree, seen); err != nil {
		return nil, fmt.Errorf("elementwise: %w", err)
	}
	return k, nil
}

// kernelPos formats an error at byte offset off of src, with a caret under it.
func kernelPos(src string, off int, msg string) string {
	off = min(max(off, 0), len(src))
	return fmt.Sprintf("column %d: %s\n\t%s\n\t%s^", off+1, msg, src, strings.Repeat(" ", off))
}

// check walks the expression once, so that Apply can only fail on its operands.
func (k *Kernel) check(n ast.Expr, inputs map[string]bool) error {
	at := func(n ast.Node, format string, args ...any) error {
		return errors.New(kernelPos(k.src, int(n.Pos())-1, fmt.Sprintf(format, args...)))
	}
	switch n := n.(type) {
	case *ast.BasicLit:
		if n.Kind != token.INT && n.Kind != token.FLOAT {
			return at(n, "literal %s: want a real number", n.Value)
		}
		if _, err := kernelLit(n); err != nil {
			return at(n, "%v", err)
		}
	case *ast.Ident:
		if !inputs[n.Name] && kernelConsts[n.Name] == nil {
			if _, ok := kernelFuncs[n.Name]; ok {
				return at(n, "function %s used as a value (call it)", n.Name)
			}
			return at(n, "unknown name %s (inputs: %s; constants: pi, e, inf, nan, true, false)", n.Name, strings.Join(k.inputs, ", "))
		}
	case *ast.ParenExpr:
		return k.check(n.X, inputs)
	case *ast.UnaryExpr:
		switch n.Op {
		case token.SUB, token.ADD, token.NOT, token.XOR:
		default:
			return at(n, "unary operator %s not supported (want - + ! ^)", n.Op)
		}
		return k.check(n.X, inputs)
	case *ast.BinaryExpr:
		if _, ok := kernelBinary[n.Op]; !ok {
			return errors.New(kernelPos(k.src, int(n.OpPos)-1, fmt.Sprintf("operator %s not supported", n.Op)))
		}
		if err := k.check(n.X, inputs); err != nil {
			return err
		}
		return k.check(n.Y, inputs)
	case *ast.CallExpr:
		id, ok := n.Fun.(*ast.Ident)
		if !ok {
			return at(n.Fun, "want a function name before (")
		}
		f, ok := kernelFuncs[id.Name]
		if !ok {
			return at(id, "unknown function %s (see gpuarray.KernelFunctions)", id.Name)
		}
		if n.Ellipsis.IsValid() {
			return errors.New(kernelPos(k.src, int(n.Ellipsis)-1, "... not supported"))
		}
		if len(n.Args) != f.arity {
			return at(id, "%s takes %d arguments, got %d", id.Name, f.arity, len(n.Args))
		}
		for _, a := range n.Args {
			if err := k.check(a, inputs); err != nil {
				return err
			}
		}
	default:
		return at(n, "%s not supported in an elementwise expression", kernelNodeName(n))
	}
	return nil
}

func kernelNodeName(n ast.Expr) string {
	switch n.(type) {
	case *ast.IndexExpr, *ast.IndexListExpr, *ast.SliceExpr:
		return "indexing"
	case *ast.SelectorExpr:
		return "a selector (x.y)"
	case *ast.CompositeLit:
		return "a composite literal"
	case *ast.FuncLit:
		return "a function literal"
	case *ast.StarExpr:
		return "a pointer dereference"
	case *ast.TypeAssertExpr:
		return "a type assertion"
	}
	return fmt.Sprintf("%T", n)
}

// kernelLit returns a number literal as a Go int (integers, weak int scalars) or float64.
func kernelLit(n *ast.BasicLit) (any, error) {
	if n.Kind == token.INT {
		v, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil {
			return nil, fmt.Errorf("integer %s out of range", n.Value)
		}
		return int(v), nil
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil {
		return nil, fmt.Errorf("number %s: %v", n.Value, err)
	}
	return v, nil
}

// Apply returns the expression with the inputs bound to args, in order: arrays (shapes
// broadcast) or Go numbers. The result is lazy, like any other operation's; errors (a wrong
// number of arguments, dtypes an operation refuses) come back in the array (see Err).
func (k *Kernel) Apply(args ...any) *Array {
	if len(args) != len(k.inputs) {
		return errArray(fmt.Errorf("kernel %q: %d arguments for %d inputs (%s)", k.src, len(args), len(k.inputs), strings.Join(k.inputs, ", ")))
	}
	env := make(map[string]any, len(args))
	for i, a := range args {
		if x, ok := a.(*Array); ok {
			if err := x.Err(); err != nil {
				return errArray(fmt.Errorf("kernel %q: input %s: %w", k.src, k.inputs[i], err))
			}
			if dt := k.types[i]; dt.Valid() {
				a = x.AsType(dt)
			}
		} else if _, f, ok := scalarKind(a); !ok {
			return errArray(fmt.Errorf("kernel %q: input %s of type %T: want *gpuarray.Array or a number", k.src, k.inputs[i], a))
		} else if dt := k.types[i]; dt.Valid() {
			n, err := expr.NewConst(f, dt, nil, nil)
			if err != nil {
				return errArray(fmt.Errorf("kernel %q: input %s: %w", k.src, k.inputs[i], err))
			}
			a = &Array{n: n}
		}
		env[k.inputs[i]] = a
	}
	v, err := k.eval(k.tree, env)
	if err != nil {
		return errArray(fmt.Errorf("kernel %q: %w", k.src, err))
	}
	if a, ok := v.(*Array); ok {
		return a
	}
	ns, err := operands(v) // all numbers: a 0-d array, as NumPy gives
	if err != nil {
		return errArray(fmt.Errorf("kernel %q: %w", k.src, err))
	}
	return &Array{n: ns[0]}
}

// eval builds the expression: values are *Array or Go numbers (kept as numbers while no
// array is involved, so that they stay weak scalars).
func (k *Kernel) eval(n ast.Expr, env map[string]any) (any, error) {
	res := func(a *Array) (any, error) {
		if err := a.Err(); err != nil {
			return nil, errors.New(kernelPos(k.src, int(n.Pos())-1, err.Error()))
		}
		return a, nil
	}
	switch n := n.(type) {
	case *ast.BasicLit:
		return kernelLit(n)
	case *ast.Ident:
		if v, ok := env[n.Name]; ok {
			return v, nil
		}
		return kernelConsts[n.Name], nil
	case *ast.ParenExpr:
		return k.eval(n.X, env)
	case *ast.UnaryExpr:
		x, err := k.eval(n.X, env)
		if err != nil {
			return nil, err
		}
		switch n.Op {
		case token.ADD:
			return x, nil
		case token.SUB:
			switch v := x.(type) { // -2 stays a weak scalar
			case int:
				return -v, nil
			case float64:
				return -v, nil
			}
			return res(unaryOf(expr.OpNeg, x))
		case token.NOT:
			return res(unaryOf(expr.OpLogicalNot, x))
		default: // ^
			return res(unaryOf(expr.OpBitwiseInvert, x))
		}
	case *ast.BinaryExpr:
		x, err := k.eval(n.X, env)
		if err != nil {
			return nil, err
		}
		y, err := k.eval(n.Y, env)
		if err != nil {
			return nil, err
		}
		return res(binaryOf(kernelBinary[n.Op], x, y))
	case *ast.CallExpr:
		args := make([]any, len(n.Args))
		for i, a := range n.Args {
			v, err := k.eval(a, env)
			if err != nil {
				return nil, err
			}
			args[i] = v
		}
		return res(kernelFuncs[n.Fun.(*ast.Ident).Name].apply(args))
	}
	return nil, fmt.Errorf("unexpected %T", n) // check refused it already
}

// Inputs returns the kernel's input names, in order.
func (k *Kernel) Inputs() []string { return slices.Clone(k.inputs) }

// String returns the kernel's inputs (with their dtypes) and expression.
func (k *Kernel) String() string {
	return fmt.Sprintf("elementwise(%s) = %s", k.params(), k.src)
}

// params returns the inputs as Elementwise took them.
func (k *Kernel) params() string {
	ps := make([]string, len(k.inputs))
	for i, name := range k.inputs {
		ps[i] = name
		if k.types[i].Valid() {
			ps[i] = k.types[i].String() + " " + name
		}
	}
	return strings.Join(ps, ", ")
}

// HTML shows the kernel in a notebook: its inputs and expression.
func (k *Kernel) HTML() string {
	return fmt.Sprintf(`<div><b>Elementwise kernel</b> (%s) &rarr; <code>%s</code></div>`,
		html.EscapeString(k.params()), html.EscapeString(k.src))
}

// KernelFunctions returns the names of the functions an Elementwise expression may call,
// sorted.
func KernelFunctions() []string {
	names := make([]string, 0, len(kernelFuncs))
	for name := range kernelFuncs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}
