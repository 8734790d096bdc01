package kernel

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
)

// History stores executed inputs across kernel restarts, as JSON lines in one file.
type History struct {
	mu      sync.Mutex
	path    string
	session int
	entries []histEntry
	// out is path opened for appending at the first Add and kept: opening and closing it for
	// every cell was two of a trivial cell's system calls. Appends stay single writes
	// (O_APPEND), so kernels sharing the file still write whole lines.
	out *os.File
}

type histEntry struct {
	Session int    `json:"session"`
	Line    int    `json:"line"`
	Input   string `json:"input"`
}

// OpenHistory loads path (created if missing) and starts a new session numbered after the last.
func OpenHistory(path string) (*History, error) {
	h := &History{path: path}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("history dir: %w", err)
	}
	f, err := os.Open(path)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("open history: %w", err)
	}
	if f != nil {
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var e histEntry
			if json.Unmarshal(sc.Bytes(), &e) == nil {
				h.entries = append(h.entries, e)
				if e.Session > h.session {
					h.session = e.Session
				}
			}
		}
		f.Close()
	}
	h.session++
	return h, nil
}

// Session is this kernel run's session number.
func (h *History) Session() int { return h.session }

// Add records input as line n of the current session.
func (h *History) Add(n int, input string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	e := histEntry{Session: h.session, Line: n, Input: input}
	h.entries = append(h.entries, e)
	if h.out == nil {
		f, err := os.OpenFile(h.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("append history: %w", err)
		}
		h.out = f
	}
	b, _ := json.Marshal(e)
	if _, err := h.out.Write(append(b, '\n')); err != nil {
		h.out.Close()
		h.out = nil // opened again for the next line
		return fmt.Errorf("append history: %w", err)
	}
	return nil
}

func (e histEntry) triple() []any { return []any{e.Session, e.Line, e.Input} }

// Tail returns the last n entries.
func (h *History) Tail(n int) [][]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	start := len(h.entries) - n
	if start < 0 || n <= 0 {
		start = 0
	}
	return triples(h.entries[start:])
}

// Range returns lines [start, stop) of session (0 or negative: relative to the current one).
func (h *History) Range(session, start, stop int) [][]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	if session <= 0 {
		session += h.session
	}
	var out []histEntry
	for _, e := range h.entries {
		if e.Session == session && e.Line >= start && (stop <= 0 || e.Line < stop) {
			out = append(out, e)
		}
	}
	return triples(out)
}

// Search returns up to n (0: all) most recent entries matching a glob pattern ('*' and '?').
func (h *History) Search(pattern string, n int, unique bool) [][]any {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []histEntry
	seen := map[string]bool{}
	for i := len(h.entries) - 1; i >= 0; i-- {
		e := h.entries[i]
		if !globMatch(pattern, e.Input) || (unique && seen[e.Input]) {
			continue
		}
		seen[e.Input] = true
		out = append(out, e)
		if n > 0 && len(out) == n {
			break
		}
	}
	for i, j := 0, len(out)-1; i < j; i, j = i+1, j-1 {
		out[i], out[j] = out[j], out[i]
	}
	return triples(out)
}

func triples(es []histEntry) [][]any {
	out := make([][]any, 0, len(es))
	for _, e := range es {
		out = append(out, e.triple())
	}
	return out
}

// globMatch matches '*' (any run, newlines included) and '?' against the whole of s.
func globMatch(pattern, s string) bool {
	if pattern == "" {
		return true
	}
	if !strings.ContainsAny(pattern, "*?") {
		return pattern == s
	}
	p, str := []rune(pattern), []rune(s)
	var match func(i, j int) bool
	memo := map[[2]int]bool{}
	match = func(i, j int) bool {
		if v, ok := memo[[2]int{i, j}]; ok {
			return v
		}
		var r bool
		switch {
		case i == len(p):
			r = j == len(str)
		case p[i] == '*':
			r = match(i+1, j) || (j < len(str) && match(i, j+1))
		case j < len(str) && (p[i] == '?' || p[i] == str[j]):
			r = match(i+1, j+1)
		}
		memo[[2]int{i, j}] = r
		return r
	}
	return match(0, 0)
}
