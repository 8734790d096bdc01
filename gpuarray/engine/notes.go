package engine

import (
	"slices"
	"strings"
	"sync"
)

// HostNotes are the host fallbacks of one computation, in the order reported.
type HostNotes struct {
	mu   sync.Mutex
	list []string
}

// Add adds msg.
func (h *HostNotes) Add(msg string) {
	h.mu.Lock()
	h.list = append(h.list, msg)
	h.mu.Unlock()
}

// AddOnce adds msg unless it is there already.
func (h *HostNotes) AddOnce(msg string) {
	h.mu.Lock()
	if !slices.Contains(h.list, msg) {
		h.list = append(h.list, msg)
	}
	h.mu.Unlock()
}

// String joins the notes with "; ".
func (h *HostNotes) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return strings.Join(h.list, "; ")
}
