package interp

import "sync"

// A go statement of a func literal is counted by gnrt.GoAdmit before the go statement and
// given back by the goroutine's deferred gnrt.GoDone. An interrupt can stop the cell between
// the two, or stop the new goroutine before its first statement (yaegi starts it with the
// cell's run id, and it then runs nothing): its count was never given back, and a session
// that interrupted a few floods reached the bound with nothing running. So an admission stays
// pending until the goroutine claims it (goBegin, or goDone when stopped before goBegin); an
// interrupt sweeps the session's pending admissions back. Every admission is given back once:
// a late claim after a sweep (a goroutine that passed yaegi's check just before the stop)
// finds none left and gives back nothing.

// pendingGo counts, by session, the admissions of go statements of func literals that no
// goroutine has claimed yet.
var pendingGo = struct {
	sync.Mutex
	n       map[*Session]int64
	stopped map[*Session]bool // swept at a stop, to sweep again before the next eval
}{n: map[*Session]int64{}, stopped: map[*Session]bool{}}

// goAdmitLit is gnrt.GoAdmit: goAdmit, with the admission pending until claimed.
func (s *Session) goAdmitLit() {
	s.goAdmit()
	pendingGo.Lock()
	pendingGo.n[s]++
	pendingGo.Unlock()
}

// claimAdmission takes one of the session's pending admissions for the running goroutine,
// and reports whether there was one (its count is then the goroutine's to give back).
func (s *Session) claimAdmission() bool {
	pendingGo.Lock()
	defer pendingGo.Unlock()
	if pendingGo.n[s] == 0 {
		return false
	}
	if pendingGo.n[s]--; pendingGo.n[s] == 0 {
		delete(pendingGo.n, s)
	}
	return true
}

// sweepAdmissions gives back the session's pending admissions after its interpreted code was
// stopped: their goroutines will not run.
func (s *Session) sweepAdmissions() {
	pendingGo.Lock()
	n := pendingGo.n[s]
	delete(pendingGo.n, s)
	pendingGo.stopped[s] = true
	pendingGo.Unlock()
	liveGoroutines.Add(-n)
}

// sweepAfterStop sweeps again before the first eval after a stop: the stopped cell may have
// run one more GoAdmit after the stop's sweep (yaegi checks its run id between nodes).
func (s *Session) sweepAfterStop() {
	pendingGo.Lock()
	stopped := pendingGo.stopped[s]
	delete(pendingGo.stopped, s)
	n := pendingGo.n[s]
	if stopped {
		delete(pendingGo.n, s)
	} else {
		n = 0
	}
	pendingGo.Unlock()
	liveGoroutines.Add(-n)
}
