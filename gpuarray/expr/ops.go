package expr

import "fmt"

// Rule says which dtypes a table op takes and gives (see gpuarray/optable; the order matches).
type Rule uint8

// The rules.
const (
	RuleSame    Rule = iota // numeric operands of one dtype, result of that dtype
	RuleFloat               // integers and bools cast to a float dtype first
	RuleTest                // numeric operands, bool result
	RuleLogical             // operands cast to bool, bool result
	RuleBits                // integer or bool operands
	RuleShift               // integer operands
	RulePart                // the real dtype of a complex operand
)

type genOp struct {
	name    string
	arity   int
	rule    Rule
	complex bool // defined for complex values
	ints    bool // defined for integers (rules Same, Test, Part)
}

// opFirstGen is the first op of the generated table.
const opFirstGen = OpGe + 1

func (o Op) gen() (genOp, bool) {
	if o >= opFirstGen && o < opEndGen {
		return genOps[o-opFirstGen], true
	}
	return genOp{}, false
}

// Generated reports whether o comes from the table (gpuarray/optable), and its rule.
func (o Op) Generated() (Rule, bool) {
	g, ok := o.gen()
	return g.rule, ok
}

// genDType checks a table op's operand dtype dt (the operands' promoted dtype) and returns
// the dtype to cast the operands to and the result's dtype.
func genDType(o Op, g genOp, dt DType) (in, out DType, err error) {
	k := dt.Kind()
	bad := func() (DType, DType, error) {
		return 0, 0, fmt.Errorf("%s of %v values is not defined", g.name, dt)
	}
	if k == 4 /* complex */ && !g.complex && g.rule != RuleLogical {
		return bad()
	}
	switch g.rule {
	case RuleSame:
		if dt == Bool || (dt.IsInteger() && !g.ints) {
			return bad()
		}
		return dt, dt, nil
	case RuleFloat:
		f := FloatFor(dt, OpExp)
		return f, f, nil
	case RuleTest:
		if dt == Bool {
			return bad()
		}
		if dt.IsInteger() && !g.ints {
			f := FloatFor(dt, OpExp)
			return f, Bool, nil
		}
		return dt, Bool, nil
	case RuleLogical:
		return Bool, Bool, nil
	case RuleBits:
		if !dt.IsInteger() && dt != Bool {
			return bad()
		}
		return dt, dt, nil
	case RuleShift:
		if !dt.IsInteger() {
			return bad()
		}
		return dt, dt, nil
	case RulePart:
		return dt, dt.Real(), nil
	}
	return bad()
}
