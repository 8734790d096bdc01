package display

import (
	"fmt"
	"html"
	"sync"
	"time"
)

// progressInterval bounds how often a progress bar is redrawn.
const progressInterval = 100 * time.Millisecond

// Progress is an HTML progress bar updated in place. Its methods are safe for concurrent use.
// Outside a cell it shows nothing.
type Progress struct {
	mu       sync.Mutex
	label    string
	total    int64
	done     int64
	start    time.Time
	last     time.Time
	handle   *Handle
	finished bool
}

// NewProgress shows a progress bar for total units of work.
func NewProgress(label string, total int64) *Progress {
	p := &Progress{label: label, total: total, start: time.Now()}
	if sink() != nil {
		p.handle = emit(Data{MIME: p.bundle()})
		p.last = time.Now()
	}
	return p
}

// Set records done units, redrawing at most every 100 ms.
func (p *Progress) Set(done int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = done
	p.redraw(false)
}

// Add records n more units.
func (p *Progress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done += n
	p.redraw(false)
}

// Done marks the work finished and draws the final state.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.finished {
		return
	}
	p.finished = true
	if p.done < p.total {
		p.done = p.total
	}
	p.redraw(true)
}

func (p *Progress) redraw(force bool) {
	if p.handle == nil {
		return
	}
	now := time.Now()
	if !force && now.Sub(p.last) < progressInterval {
		return
	}
	p.last = now
	d := Data{MIME: p.bundle()}
	d.DisplayID = p.handle.id
	p.handle.sink.Display(d, true)
}

func (p *Progress) bundle() map[string]any {
	frac := 0.0
	if p.total > 0 {
		frac = float64(p.done) / float64(p.total)
	}
	if frac > 1 {
		frac = 1
	}
	el := time.Since(p.start).Round(time.Millisecond)
	text := fmt.Sprintf("%s: %d/%d (%.0f%%) %v", p.label, p.done, p.total, 100*frac, el)
	h := fmt.Sprintf(`<div style="font-family:monospace;font-size:12px">`+
		`<span>%s</span> <progress value="%d" max="%d" style="width:40%%"></progress> `+
		`<span>%d/%d (%.0f%%) %v</span></div>`,
		html.EscapeString(p.label), p.done, p.total, p.done, p.total, 100*frac, el)
	return map[string]any{"text/html": h, "text/plain": text}
}
