package widget

import (
	"fmt"
	"sync"

	"github.com/gpunotes/gpunotes/display"
)

// Output is a widget that holds outputs (streams, displays) as its "outputs" trait, so they
// survive a page reload and a saved notebook. Callbacks of the page write here; Capture sends
// a function's displays here. It is a display.Sink.
type Output struct {
	*Model
	mu        sync.Mutex
	ids       []string // the display id of each output ("" for none)
	clearNext bool
}

// NewOutput makes an empty Output widget.
func NewOutput(traits ...T) *Output {
	return &Output{Model: newModel(outputModule, outputVersion, "OutputModel", outputModule, outputVersion, "OutputView",
		T{"_dom_classes": []any{}, "layout": nil, "msg_id": "", "outputs": []any{}, "tabbable": nil, "tooltip": nil}, traits)}
}

func (o *Output) outputs() []any {
	v, _ := o.Get("outputs").([]any)
	return append([]any(nil), v...)
}

func (o *Output) push(entry map[string]any, id string, merge bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	outs := o.outputs()
	if o.clearNext {
		outs, o.ids, o.clearNext = nil, nil, false
	}
	if merge && len(outs) > 0 {
		if last, ok := outs[len(outs)-1].(map[string]any); ok && last["output_type"] == "stream" && last["name"] == entry["name"] {
			merged := map[string]any{"output_type": "stream", "name": last["name"], "text": toString(last["text"]) + toString(entry["text"])}
			outs[len(outs)-1] = merged
			o.Set("outputs", outs)
			return
		}
	}
	outs = append(outs, entry)
	o.ids = append(o.ids, id)
	o.Set("outputs", outs)
}

// Stream appends text to the stdout or stderr stream shown.
func (o *Output) Stream(name, text string) {
	o.push(map[string]any{"output_type": "stream", "name": name, "text": text}, "", true)
}

// Print appends its operands' text, as fmt.Print does.
func (o *Output) Print(a ...any) { o.Stream("stdout", fmt.Sprint(a...)) }

// Println appends its operands' text and a newline, as fmt.Println does.
func (o *Output) Println(a ...any) { o.Stream("stdout", fmt.Sprintln(a...)) }

// Printf appends formatted text, as fmt.Printf does.
func (o *Output) Printf(format string, a ...any) { o.Stream("stdout", fmt.Sprintf(format, a...)) }

// Display shows d in the Output; with update, it replaces the outputs of d's display id.
func (o *Output) Display(d display.Data, update bool) {
	md := d.Metadata
	if md == nil {
		md = map[string]any{}
	}
	entry := map[string]any{"output_type": "display_data", "data": d.MIME, "metadata": md}
	if update {
		o.mu.Lock()
		outs := o.outputs()
		hit := false
		for i, id := range o.ids {
			if id == d.DisplayID && id != "" && i < len(outs) {
				outs[i] = entry
				hit = true
			}
		}
		if hit {
			o.Set("outputs", outs)
		}
		o.mu.Unlock()
		return
	}
	o.push(entry, d.DisplayID, false)
}

// Clear removes the outputs; with wait, when the next output arrives.
func (o *Output) Clear(wait bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if wait {
		o.clearNext = true
		return
	}
	o.ids = nil
	o.Set("outputs", []any{})
}

// Capture runs fn with its output sent to the Output, as ipywidgets' `with out:` does: what
// it prints (fmt.Println, compiled code and child processes writing to stdout or stderr) and
// its displays (display.Show, display.HTML, charts, handles' updates). Prints made before
// Capture stay where they were going, in order; goroutines printing while fn runs are
// captured too, as the kernel cannot tell their prints apart. Captures nest. Outside the
// kernel (gpunotes run, tests) only displays are captured.
func (o *Output) Capture(fn func()) {
	prev := display.CurrentSink()
	c := capturing{o, display.Comms(), nil}
	if r, ok := prev.(display.StreamRouter); ok {
		c.router = r
		defer r.RouteStreams(o.Stream)()
	}
	restore := display.Bind(display.Context(), c)
	defer restore()
	fn()
}

// capturing is an Output as the bound sink, comms still reaching the front end through the
// sink bound before, and prints still read by the router of the sink bound before.
type capturing struct {
	*Output
	prev   display.CommSink
	router display.StreamRouter
}

func (c capturing) Comm(msgType string, content, metadata map[string]any, buffers [][]byte) {
	if c.prev != nil {
		c.prev.Comm(msgType, content, metadata, buffers)
	}
}

// Display shows d in the Output after the text fn printed before it.
func (c capturing) Display(d display.Data, update bool) {
	c.FlushStreams()
	c.Output.Display(d, update)
}

// Clear clears the Output after the text fn printed before it arrived.
func (c capturing) Clear(wait bool) {
	c.FlushStreams()
	c.Output.Clear(wait)
}

// FlushStreams waits for fn's prints to arrive (display.StreamRouter).
func (c capturing) FlushStreams() {
	if c.router != nil {
		c.router.FlushStreams()
	}
}

// RouteStreams lets a Capture inside fn take the prints over (display.StreamRouter).
func (c capturing) RouteStreams(to func(name, text string)) (restore func()) {
	if c.router == nil {
		return func() {}
	}
	return c.router.RouteStreams(to)
}
