package nbrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/interp"
)

// Executor runs one cell; *interp.Session is one.
type Executor interface {
	Execute(ctx context.Context, code string, out interp.Output) (*display.Data, error)
}

// Options configures Run. The zero value runs silently.
type Options struct {
	// Progress receives one line when a cell starts and one when it ends (nil: none).
	Progress io.Writer
	// Stdout and Stderr receive the cells' stream output as it happens (nil: not echoed).
	// Stdout also receives, when a cell ends, the text/plain form of its rich outputs.
	Stdout, Stderr io.Writer
	// CellTimeout bounds each cell (0: no limit). A cell past it fails as interrupted.
	CellTimeout time.Duration
	// CellStarted and CellDone, when set, are called with the cell's index in nb.Cells before a
	// code cell runs and after it completed without error (gpunotes run saves the notebook
	// there, so a cell that kills the process loses none of the cells before it).
	CellStarted, CellDone func(index int)
}

// CellFailure is the error Run returns when a cell fails. The notebook keeps the cell's error
// output and the outputs of every cell before it.
type CellFailure struct {
	Index   int    // index of the cell in the notebook, from 0
	Number  int    // which code cell it is, from 1
	Count   int    // how many code cells the notebook has
	ID      string // the cell's id
	Summary string // the cell's first non-empty source line
	EName   string
	EValue  string
}

func (e *CellFailure) Error() string {
	return fmt.Sprintf("code cell %d of %d (id %s, %q) failed: %s: %s", e.Number, e.Count, e.ID, e.Summary, e.EName, e.EValue)
}

// Result summarizes a run.
type Result struct {
	Executed int           // code cells executed, the failing one included
	Elapsed  time.Duration // wall time of the whole run
}

// GoKernelspec is the kernelspec metadata Run writes into notebooks that have none.
var GoKernelspec = map[string]string{"name": "gpunotes", "display_name": "Go (gpunotes)", "language": "go"}

// ErrLanguage is wrapped by Run's error for a notebook written for another language.
var ErrLanguage = errors.New("notebook language is not Go")

// CheckLanguage returns an error wrapping ErrLanguage when the notebook says it is for a
// language other than Go.
func CheckLanguage(nb *Notebook) error {
	if lang := nb.Language(); lang != "" && lang != "go" {
		return fmt.Errorf("%w: it is a %s notebook, and gpunotes runs Go", ErrLanguage, lang)
	}
	return nil
}

// Run executes the notebook's code cells in order through ex, replacing their outputs and
// execution counts as a Jupyter client would. It stops at the first failing cell and returns a
// *CellFailure; cells after it are left with no outputs. Cancelling ctx interrupts the running
// cell (it fails as interrupted).
func Run(ctx context.Context, nb *Notebook, ex Executor, opts Options) (Result, error) {
	start := time.Now()
	if err := CheckLanguage(nb); err != nil {
		return Result{}, err
	}
	setGoMetadata(nb)
	defer storeWidgetState(nb)
	var code []int
	for i, c := range nb.Cells {
		if c.Type != "code" {
			continue
		}
		c.Outputs = nil
		c.ExecutionCount = nil
		if strings.TrimSpace(c.Source) != "" {
			code = append(code, i)
		}
	}
	r := &runner{displays: map[string][]*Output{}, opts: opts}
	// Goroutines a cell left running (live tables, progress) may still update displays; once
	// Run returns the notebook belongs to the caller, so they stop being recorded.
	defer r.detach()
	res := Result{}
	for n, i := range code {
		if err := ctx.Err(); err != nil {
			return res, fmt.Errorf("run stopped before code cell %d of %d: %w", n+1, len(code), err)
		}
		c := nb.Cells[i]
		count := n + 1
		c.ExecutionCount = &count
		summary := firstLine(c.Source)
		progressf(opts.Progress, "[%d/%d] cell %s: %s\n", n+1, len(code), c.ID, summary)
		t0 := time.Now()
		if opts.CellStarted != nil {
			opts.CellStarted(i)
		}
		cerr := r.execute(ctx, ex, c, count)
		res.Executed++
		el := time.Since(t0)
		if cerr != nil {
			progressf(opts.Progress, "      FAILED after %s: %s: %s\n", round(el), cerr.Name, cerr.Value)
			res.Elapsed = time.Since(start)
			return res, &CellFailure{Index: i, Number: n + 1, Count: len(code), ID: c.ID, Summary: summary, EName: cerr.Name, EValue: cerr.Value}
		}
		progressf(opts.Progress, "      ok in %s\n", round(el))
		if opts.CellDone != nil {
			opts.CellDone(i)
		}
	}
	res.Elapsed = time.Since(start)
	return res, nil
}

func round(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(10 * time.Millisecond)
	}
	return d.Round(100 * time.Microsecond)
}

func progressf(w io.Writer, format string, args ...any) {
	if w != nil {
		fmt.Fprintf(w, format, args...)
	}
}

// FirstLine is a cell's first non-empty source line, shortened: how progress names a cell.
func FirstLine(src string) string { return firstLine(src) }

func firstLine(src string) string {
	for _, l := range strings.Split(src, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			if len(l) > 60 {
				l = l[:57] + "..."
			}
			return l
		}
	}
	return ""
}

// setGoMetadata fills in the kernelspec and language_info of a notebook that lacks them.
func setGoMetadata(nb *Notebook) {
	if _, ok := nb.Metadata["kernelspec"]; !ok {
		b, _ := json.Marshal(GoKernelspec)
		nb.Metadata["kernelspec"] = b
	}
	if _, ok := nb.Metadata["language_info"]; !ok {
		b, _ := json.Marshal(map[string]string{"name": "go", "file_extension": ".go", "mimetype": "text/x-go"})
		nb.Metadata["language_info"] = b
	}
}

// runner collects outputs as a Jupyter client does: consecutive stream text is merged,
// update_display_data replaces every output shown with that display id (in any cell), and
// clear_output(wait) clears when the next output arrives.
type runner struct {
	opts     Options
	mu       sync.Mutex
	displays map[string][]*Output
	cell     *Cell
	count    int  // the running cell's execution count
	clearing bool // a Clear(wait=true) is pending
	detached bool // Run has returned
}

// ExecutionCount is the running cell's In[N], for the executor's tracebacks.
func (r *runner) ExecutionCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count
}

func (r *runner) detach() {
	r.mu.Lock()
	r.detached = true
	r.mu.Unlock()
}

func (r *runner) execute(ctx context.Context, ex Executor, c *Cell, count int) *interp.CellError {
	if r.opts.CellTimeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.opts.CellTimeout)
		defer cancel()
	}
	r.mu.Lock()
	r.cell, r.clearing, r.count = c, false, count
	r.mu.Unlock()
	res, err := ex.Execute(ctx, c.Source, r)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.cell = nil
	if err == nil && res != nil {
		r.flushClear()
		c.Outputs = append(c.Outputs, &Output{Type: "execute_result", Data: mimeData(res.MIME), Metadata: jsonMetadata(res.Metadata), ExecutionCount: &count})
	}
	if err != nil {
		var ce *interp.CellError
		if !errors.As(err, &ce) {
			ce = &interp.CellError{Name: "Error", Value: err.Error(), Traceback: []string{err.Error()}}
		}
		tb := ce.Traceback
		if tb == nil {
			tb = []string{ce.Name + ": " + ce.Value}
		}
		c.Outputs = append(c.Outputs, &Output{Type: "error", EName: ce.Name, EValue: ce.Value, Traceback: tb})
		r.echoRich(c)
		return ce
	}
	r.echoRich(c)
	return nil
}

var placeholderRE = regexp.MustCompile(`^<[^<>\n]*>$`)

// echoRich writes the text/plain form of the cell's rich outputs (in their final state) to
// Stdout, skipping placeholders such as "<HTML>".
func (r *runner) echoRich(c *Cell) {
	if r.opts.Stdout == nil {
		return
	}
	for _, o := range c.Outputs {
		switch o.Type {
		case "display_data", "execute_result":
			s, _ := o.Data["text/plain"].(string)
			if s == "" || placeholderRE.MatchString(s) {
				continue
			}
			if !strings.HasSuffix(s, "\n") {
				s += "\n"
			}
			io.WriteString(r.opts.Stdout, s)
		case "error":
			if r.opts.Stderr != nil {
				io.WriteString(r.opts.Stderr, strings.Join(o.Traceback, "\n")+"\n")
			}
		}
	}
}

// mimeData copies a bundle into what nbformat accepts: JSON types (application/json and
// application/*+json) hold any JSON value, every other type a string. A value that cannot be
// encoded as JSON is dropped rather than making the notebook unwritable.
func mimeData(m map[string]any) map[string]any {
	out := make(map[string]any, len(m))
	for k, v := range m {
		if !isJSONMime(k) {
			if s, ok := v.(string); ok {
				out[k] = s
			} else if b, ok := v.([]byte); ok {
				out[k] = string(b)
			} else {
				out[k] = fmt.Sprint(v)
			}
			continue
		}
		if jsonValue(v) {
			out[k] = v
		}
	}
	return out
}

// jsonMetadata keeps the metadata entries that encode as JSON.
func jsonMetadata(m map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range m {
		if jsonValue(v) {
			out[k] = v
		}
	}
	return out
}

func jsonValue(v any) bool {
	_, err := json.Marshal(v)
	return err == nil
}

func isJSONMime(k string) bool {
	return k == "application/json" || strings.HasPrefix(k, "application/") && strings.HasSuffix(k, "+json")
}

// flushClear applies a pending Clear(wait=true); r.mu is held.
func (r *runner) flushClear() {
	if r.clearing && r.cell != nil {
		r.cell.Outputs = nil
	}
	r.clearing = false
}

// Stream records text the cell wrote to stdout or stderr.
func (r *runner) Stream(name, text string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if w := r.opts.Stdout; name == "stderr" {
		w = r.opts.Stderr
		if w != nil {
			io.WriteString(w, text)
		}
	} else if w != nil {
		io.WriteString(w, text)
	}
	if r.cell == nil {
		return // a goroutine of a finished cell: echoed, not recorded
	}
	r.flushClear()
	outs := r.cell.Outputs
	if n := len(outs); n > 0 && outs[n-1].Type == "stream" && outs[n-1].Name == name {
		outs[n-1].Text += text
		return
	}
	r.cell.Outputs = append(outs, &Output{Type: "stream", Name: name, Text: text})
}

// Display records a display_data output, or with update replaces the outputs shown earlier
// with the same display id.
func (r *runner) Display(d display.Data, update bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.detached {
		return
	}
	if update {
		for _, o := range r.displays[d.DisplayID] {
			o.Data = mimeData(d.MIME)
			o.Metadata = jsonMetadata(d.Metadata)
		}
		return
	}
	if r.cell == nil {
		return
	}
	r.flushClear()
	o := &Output{Type: "display_data", Data: mimeData(d.MIME), Metadata: jsonMetadata(d.Metadata)}
	r.cell.Outputs = append(r.cell.Outputs, o)
	if d.DisplayID != "" {
		r.displays[d.DisplayID] = append(r.displays[d.DisplayID], o)
	}
}

// Clear clears the running cell's outputs, at once or (wait) when the next output arrives.
func (r *runner) Clear(wait bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cell == nil {
		return
	}
	if wait {
		r.clearing = true
		return
	}
	r.cell.Outputs = nil
	r.clearing = false
}

// Input fails: a headless run has no one to answer.
func (r *runner) Input(prompt string, password bool) (string, error) {
	return "", errors.New("input is not available when a notebook runs headless (gpunotes run)")
}
