package interp

import (
	"bytes"
	"runtime"
	"time"
)

// yaegiEvalFrame is the function of the goroutine in which yaegi's EvalWithContext runs the
// code it was given.
var yaegiEvalFrame = []byte("\ngithub.com/traefik/yaegi/interp.(*Interpreter).EvalWithContext.func1(")

// waitEvalsUnwound waits, for at most max, until no goroutine runs code that an
// EvalWithContext was given. An interrupted EvalWithContext returns before its code has
// seen the stop; the next Eval sets the root frame's run id to the current one, and code
// still running in that frame (a cell's top-level `for { n++ }`) would then run on, forever,
// after its cell was reported interrupted. Polled: yaegi offers no signal of its own.
func waitEvalsUnwound(max time.Duration) bool {
	buf := make([]byte, 1<<20)
	deadline := time.Now().Add(max)
	for {
		n := runtime.Stack(buf, true)
		if n == len(buf) && len(buf) < 64<<20 {
			buf = make([]byte, 2*len(buf))
			continue
		}
		if !bytes.Contains(buf[:n], yaegiEvalFrame) {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(time.Millisecond)
	}
}
