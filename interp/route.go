package interp

import "github.com/gpunotes/gpunotes/display"

// routed is emit, or the route set by RouteStreams while one is set.
func (c *capture) routed(emit streamFunc) streamFunc {
	return func(name, text string) {
		if r := c.route.Load(); r != nil {
			(*r)(name, text)
			return
		}
		emit(name, text)
	}
}

// FlushStreams waits until what the cell printed so far was emitted (display.StreamRouter).
func (f flushingSink) FlushStreams() { f.cap.flush() }

// RouteStreams sends the cell's prints to to from now on (display.StreamRouter): an Output
// widget's Capture. Flushing first and on restore keeps each print on its side of the switch.
func (f flushingSink) RouteStreams(to func(name, text string)) (restore func()) {
	f.cap.flush()
	r := streamFunc(to)
	prev := f.cap.route.Swap(&r)
	return func() {
		f.cap.flush()
		f.cap.route.Store(prev)
	}
}

var _ display.StreamRouter = flushingSink{}
