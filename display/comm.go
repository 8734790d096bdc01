package display

import "sync/atomic"

// CommSink is implemented by sinks that reach the front end's comms (the kernel's cell
// outputs). Widgets publish comm_open, comm_msg and comm_close through it: content is the
// message content, metadata the message metadata, buffers its binary frames.
type CommSink interface {
	Comm(msgType string, content, metadata map[string]any, buffers [][]byte)
}

type commHolder struct{ s CommSink }

var fallbackComm atomic.Pointer[commHolder]

// SetCommSink sets where comm messages go when the bound sink has no comms (between cells, from
// goroutines); the kernel sets it while it serves. Nil removes it.
func SetCommSink(s CommSink) {
	if s == nil {
		fallbackComm.Store(nil)
		return
	}
	fallbackComm.Store(&commHolder{s})
}

// Comms returns the comm sink of the running cell or callback, else the kernel's (SetCommSink),
// else nil: no front end (a headless run), where widgets keep their state only.
func Comms() CommSink {
	if s, ok := sink().(CommSink); ok {
		return s
	}
	if h := fallbackComm.Load(); h != nil {
		return h.s
	}
	return nil
}

// CurrentSink returns the sink bound to the running cell or callback, or nil.
func CurrentSink() Sink { return sink() }
