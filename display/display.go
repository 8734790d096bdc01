package display

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"image"
	"image/png"
	"sync"
	"sync/atomic"

	"github.com/google/uuid"
)

// Data is one rich output: a MIME bundle with its metadata. DisplayID is set for displays that
// can be updated in place.
type Data struct {
	MIME      map[string]any
	Metadata  map[string]any
	DisplayID string
}

// Sink receives what display functions emit while a cell runs.
type Sink interface {
	Display(d Data, update bool)
	Clear(wait bool)
}

type binding struct {
	ctx  context.Context
	sink Sink
	id   uint64
}

var (
	current  atomic.Pointer[binding]
	bindings atomic.Uint64
)

// Bind makes ctx and s the running cell's context and sink until restore is called.
func Bind(ctx context.Context, s Sink) (restore func()) {
	prev := current.Swap(&binding{ctx: ctx, sink: s, id: bindings.Add(1)})
	return func() { current.Store(prev) }
}

// BindingID identifies the running cell's (or callback's) binding: a new number for each Bind,
// 0 outside any.
func BindingID() uint64 {
	if b := current.Load(); b != nil {
		return b.id
	}
	return 0
}

// Context returns the running cell's context, or context.Background outside a cell.
func Context() context.Context {
	if b := current.Load(); b != nil && b.ctx != nil {
		return b.ctx
	}
	return context.Background()
}

func sink() Sink {
	if b := current.Load(); b != nil {
		return b.sink
	}
	return nil
}

// Handle is a display that can be updated in place.
type Handle struct {
	mu   sync.Mutex
	id   string
	sink Sink
}

func emit(d Data) *Handle {
	h := &Handle{id: uuid.NewString(), sink: sink()}
	d.DisplayID = h.id
	if h.sink != nil {
		h.sink.Display(d, false)
	}
	return h
}

// ID returns the display id that update_display_data messages refer to.
func (h *Handle) ID() string { return h.id }

// Update replaces the display's content with v's bundle (a string is shown as HTML).
func (h *Handle) Update(v any) {
	d := toData(v)
	d.DisplayID = h.id
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.sink != nil {
		h.sink.Display(d, true)
	}
}

func toData(v any) Data {
	if s, ok := v.(string); ok {
		return Data{MIME: map[string]any{"text/html": s, "text/plain": s}}
	}
	if d, ok := v.(Data); ok {
		return d
	}
	d, _ := Bundle(v)
	return d
}

// HTML shows an HTML fragment.
func HTML(s string) *Handle {
	return emit(Data{MIME: map[string]any{"text/html": s, "text/plain": "<HTML>"}})
}

// Markdown shows Markdown text.
func Markdown(s string) *Handle {
	return emit(Data{MIME: map[string]any{"text/markdown": s, "text/plain": s}})
}

// SVG shows an SVG image given as its XML text.
func SVG(s string) *Handle {
	return emit(Data{MIME: map[string]any{"image/svg+xml": s, "text/plain": "<SVG image>"}})
}

// PNG shows a PNG image given as its encoded bytes.
func PNG(b []byte) *Handle {
	return emit(Data{MIME: map[string]any{"image/png": base64.StdEncoding.EncodeToString(b), "text/plain": "<PNG image>"}})
}

// JSON shows v as application/json (v must be JSON-marshalable).
func JSON(v any) *Handle {
	return emit(Data{MIME: map[string]any{"application/json": v, "text/plain": fmt.Sprint(v)}})
}

// Show shows v with its richest representation (see Bundle).
func Show(v any) *Handle {
	d, _ := Bundle(v)
	return emit(d)
}

// Clear clears the cell's output; with wait, only when the next output arrives.
func Clear(wait bool) {
	if s := sink(); s != nil {
		s.Clear(wait)
	}
}

// Bundle returns v's MIME bundle. It is rich (ok is true) when v has a DisplayData, HTML,
// Markdown, SVG or PNG method, or is an image.Image; text/plain is always present.
func Bundle(v any) (d Data, ok bool) {
	if x, ok := v.(interface{ DisplayData() Data }); ok {
		// A value with its own bundle (a widget's view) shows just that.
		return x.DisplayData(), true
	}
	if x := embeddedDisplay(v); x != nil {
		return x.DisplayData(), true
	}
	m := map[string]any{"text/plain": plain(v)}
	d = Data{MIME: m}
	switch x := v.(type) {
	case interface{ HTML() string }:
		m["text/html"] = x.HTML()
		ok = true
	case interface{ Markdown() string }:
		m["text/markdown"] = x.Markdown()
		ok = true
	case interface{ SVG() string }:
		m["image/svg+xml"] = x.SVG()
		ok = true
	case interface{ PNG() []byte }:
		m["image/png"] = base64.StdEncoding.EncodeToString(x.PNG())
		ok = true
	case image.Image:
		var buf bytes.Buffer
		if err := png.Encode(&buf, x); err == nil {
			m["image/png"] = base64.StdEncoding.EncodeToString(buf.Bytes())
			ok = true
		}
	}
	return d, ok
}

func plain(v any) string {
	switch x := v.(type) {
	case fmt.Stringer:
		return x.String()
	case string:
		return fmt.Sprintf("%q", x)
	case error:
		return x.Error()
	}
	return fmt.Sprintf("%v", v)
}
