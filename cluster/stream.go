package cluster

import (
	"strings"
	"time"
)

// TaskEvent is one finished task in the scheduler's task stream (what the dashboard draws).
type TaskEvent struct {
	Key    string
	Prefix string // the key without its counter: the function's name, or "chunk"
	Worker string
	State  string // memory or erred
	// Start and Stop are when the task ran, on the scheduler's clock: Stop is when the
	// scheduler heard of it, Start that minus the run time the worker measured.
	Start, Stop time.Time
	// FetchBytes is what the worker fetched from peers before running the task, and
	// FetchSeconds how long that took.
	FetchBytes   int64
	FetchSeconds float64
}

// Sample is one point of a worker's resource history, taken when it reports (every second).
type Sample struct {
	Time        time.Time
	GPUMemUsed  uint64
	GPUMemTotal uint64
	GPUUtil     int // percent; -1 when unknown (CPU workers)
	RSS         uint64
	MemoryLimit uint64
	Busy        float64 // tasks running / threads, in [0, 1]
}

const (
	streamLen  = 4000
	historyLen = 600
)

// keyPrefix is a task key without its trailing "-N".
func keyPrefix(k string) string {
	if i := strings.LastIndexByte(k, '-'); i > 0 {
		k = k[:i]
	}
	// Remote clients' keys end in "-CLIENT-N".
	if i := strings.LastIndexByte(k, '@'); i > 0 {
		k = k[:i]
	}
	return k
}

// recordLocked adds a finished task to the stream; f is the worker's done or erred frame.
func (s *scheduler) recordLocked(t *task, w *wconn, f *frame) {
	now := time.Now()
	ev := TaskEvent{Key: t.key, Prefix: keyPrefix(t.key), Worker: w.info.Name, State: StateMemory, Stop: now,
		FetchBytes: f.FetchBytes, FetchSeconds: float64(f.FetchNanos) / 1e9}
	if f.Op == "erred" {
		ev.State = StateErred
	}
	ev.Start = now
	if f.Stop > f.Start && f.Start > 0 {
		ev.Start = now.Add(-time.Duration(f.Stop - f.Start))
	}
	if len(s.stream) >= streamLen {
		n := copy(s.stream, s.stream[len(s.stream)-streamLen/2:])
		s.stream = s.stream[:n]
	}
	s.stream = append(s.stream, ev)
	if t.spec.Kind == "call" || t.spec.Kind == "blocks" {
		if _, ok := s.sources[ev.Prefix]; !ok && len(s.sources) < 256 {
			s.sources[ev.Prefix] = t.spec.Source
		}
	}
}

// sampleLocked records w's latest report in its history.
func (s *scheduler) sampleLocked(w *wconn) {
	st := w.stats
	busy := float64(len(w.processing))
	if n := w.info.NThreads; n > 0 {
		busy /= float64(n)
	}
	busy = min(busy, 1)
	util := st.GPUUtil
	if w.info.GPU == "" {
		util = -1
	}
	h := s.history[w.info.Name]
	if len(h) >= historyLen {
		n := copy(h, h[len(h)-historyLen/2:])
		h = h[:n]
	}
	total := st.GPUMemTotal
	if w.info.DeviceMemoryLimit > 0 {
		total = w.info.DeviceMemoryLimit
	}
	s.history[w.info.Name] = append(h, Sample{Time: time.Now(), GPUMemUsed: st.GPUMemUsed, GPUMemTotal: total,
		GPUUtil: util, RSS: st.RSS, MemoryLimit: w.info.MemoryLimit, Busy: busy})
}

// stateFrame is the frame that tells a remote client a task's state.
func stateFrame(t *task) *frame {
	f := &frame{Op: "state", Key: t.key, State: t.state}
	if t.err != nil {
		f.Err = t.err.Error()
		if te, ok := t.err.(*TaskError); ok {
			f.Type, f.Err, f.Reason, f.Trace = "TaskError", te.Message, te.Worker, te.Traceback
		}
	}
	return f
}

func roleName(role string) string {
	if role == "client" {
		return "client"
	}
	return "worker"
}

func gpuNote(h *hello) string {
	if h.GPU == "" {
		return ", CPU"
	}
	return ", " + h.GPULabel + " " + h.GPUName
}
