package display

// StreamRouter is implemented by sinks that capture what a cell prints (the kernel's cells and
// widget callbacks, where fd 1 and 2 are pipes read by a pump): an Output widget capturing
// calls it so that prints reach the widget in the order they were made.
type StreamRouter interface {
	// FlushStreams returns once the text printed so far has reached where it was going.
	FlushStreams()
	// RouteStreams flushes, then sends the text printed from now on to to, until restore is
	// called (which flushes again and gives the streams back to where they went before).
	RouteStreams(to func(name, text string)) (restore func())
}
