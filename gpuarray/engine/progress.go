package engine

import (
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/display"
)

// progressDelay is how long a computation runs before it shows a progress bar in a cell.
const progressDelay = 300 * time.Millisecond

// Progress reports finished tasks to a callback and, after progressDelay, to a display bar.
type Progress struct {
	mu    sync.Mutex
	total int
	done  int
	cb    func(done, total int)
	bar   *display.Progress
	timer *time.Timer
	// OK, set when the work succeeded, lets Finish mark the bar done.
	OK bool
}

// NewProgress returns the progress of total tasks of a computation: cb, when set, hears each
// step; quiet shows no bar.
func NewProgress(total int, cb func(done, total int), quiet bool) *Progress {
	return NewProgressTitled("gpuarray compute (chunks)", total, cb, quiet)
}

// NewProgressTitled is NewProgress with the bar's title.
func NewProgressTitled(title string, total int, cb func(done, total int), quiet bool) *Progress {
	p := &Progress{total: total, cb: cb}
	delay := progressDelay
	if quiet {
		delay = time.Duration(1<<63 - 1)
	}
	p.timer = time.AfterFunc(delay, func() {
		p.mu.Lock()
		defer p.mu.Unlock()
		if p.timer != nil {
			p.bar = display.NewProgress(title, int64(p.total))
			p.bar.Set(int64(p.done))
		}
	})
	return p
}

// Add counts n more tasks done.
func (p *Progress) Add(n int) {
	p.mu.Lock()
	p.done += n
	d := p.done
	if p.bar != nil {
		p.bar.Set(int64(d))
	}
	p.mu.Unlock()
	if p.cb != nil {
		p.cb(d, p.total)
	}
}

// Finish stops the bar: done where OK is set, left as it stands otherwise.
func (p *Progress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.timer.Stop()
	p.timer = nil
	if p.bar != nil && p.OK {
		p.bar.Done()
	}
}
