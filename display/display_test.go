package display

import (
	"context"
	"image"
	"strings"
	"sync"
	"testing"
)

type recSink struct {
	mu      sync.Mutex
	shown   []Data
	updates []Data
	clears  int
}

func (r *recSink) Display(d Data, update bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if update {
		r.updates = append(r.updates, d)
	} else {
		r.shown = append(r.shown, d)
	}
}
func (r *recSink) Clear(bool) { r.clears++ }

type htmlThing struct{}

func (htmlThing) HTML() string   { return "<b>x</b>" }
func (htmlThing) String() string { return "thing" }

func TestBindContextAndRestore(t *testing.T) {
	if Context() != context.Background() {
		t.Fatal("outside a cell, Context must be Background")
	}
	ctx, cancel := context.WithCancel(context.Background())
	s := &recSink{}
	restore := Bind(ctx, s)
	if Context() != ctx {
		t.Fatal("Context did not return the bound context")
	}
	cancel()
	if Context().Err() == nil {
		t.Fatal("cancel did not reach Context")
	}
	restore()
	if Context() != context.Background() {
		t.Fatal("restore did not unbind")
	}
}

func TestDisplayAndUpdate(t *testing.T) {
	s := &recSink{}
	defer Bind(context.Background(), s)()
	h := HTML("<i>a</i>")
	h.Update("<i>b</i>")
	Markdown("# t")
	Clear(true)
	if len(s.shown) != 2 || len(s.updates) != 1 || s.clears != 1 {
		t.Fatalf("shown %d updates %d clears %d", len(s.shown), len(s.updates), s.clears)
	}
	if s.shown[0].DisplayID == "" || s.updates[0].DisplayID != s.shown[0].DisplayID {
		t.Fatalf("update must carry the display id: %q vs %q", s.updates[0].DisplayID, s.shown[0].DisplayID)
	}
	if s.updates[0].MIME["text/html"] != "<i>b</i>" {
		t.Fatalf("update content %v", s.updates[0].MIME)
	}
}

func TestBundle(t *testing.T) {
	d, ok := Bundle(htmlThing{})
	if !ok || d.MIME["text/html"] != "<b>x</b>" || d.MIME["text/plain"] != "thing" {
		t.Fatalf("bundle of HTML value: %v %v", ok, d.MIME)
	}
	d, ok = Bundle(image.NewRGBA(image.Rect(0, 0, 2, 2)))
	if !ok || d.MIME["image/png"] == nil {
		t.Fatalf("image bundle: %v", d.MIME)
	}
	d, ok = Bundle(42)
	if ok || d.MIME["text/plain"] != "42" {
		t.Fatalf("plain bundle: %v %v", ok, d.MIME)
	}
}

func TestProgressThrottlesAndFinishes(t *testing.T) {
	s := &recSink{}
	defer Bind(context.Background(), s)()
	p := NewProgress("chunks", 1000)
	for i := 0; i < 1000; i++ {
		p.Add(1)
	}
	p.Done()
	if len(s.shown) != 1 {
		t.Fatalf("progress must show once, got %d", len(s.shown))
	}
	if len(s.updates) > 3 {
		t.Fatalf("progress not throttled: %d updates for a fast loop", len(s.updates))
	}
	last := s.updates[len(s.updates)-1].MIME["text/plain"].(string)
	if !strings.Contains(last, "1000/1000") {
		t.Fatalf("final state not drawn: %q", last)
	}
}

func TestProgressOutsideCell(t *testing.T) {
	p := NewProgress("x", 3)
	p.Add(3)
	p.Done() // must not panic without a sink
}
