package cluster

import (
	"fmt"
	"html"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/display"
)

// TaskStream is the tasks that finished in a period, with where and when they ran, as dask's
// get_task_stream. Shown in a cell it is a chart (a row per worker, a bar per task, a colour
// per task kind) above a table.
type TaskStream struct {
	Events []TaskEvent
}

// GetTaskStream returns the tasks that finished since since (the zero time: all the
// scheduler remembers, its last 4000).
func (c *Client) GetTaskStream(since time.Time) (*TaskStream, error) {
	r, err := c.ctlCall(cellContext(), &ctlMsg{Op: "stream", Since: since})
	if err != nil {
		return nil, err
	}
	return &TaskStream{Events: r.Stream}, nil
}

// Kinds counts the tasks by kind (their key prefix: the function's name, "persist", ...).
func (ts *TaskStream) Kinds() map[string]int {
	out := map[string]int{}
	for _, e := range ts.Events {
		out[e.Prefix]++
	}
	return out
}

func (ts *TaskStream) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "TaskStream: %d tasks", len(ts.Events))
	for _, k := range sortedKeys(ts.Kinds()) {
		fmt.Fprintf(&b, ", %s %d", k, ts.Kinds()[k])
	}
	return b.String()
}

// HTML renders the chart and the table (the table's first 200 rows).
func (ts *TaskStream) HTML() string {
	var b strings.Builder
	b.WriteString(ts.SVG())
	b.WriteString(`<table style="font-family:monospace;font-size:12px"><tr><th>key</th><th>kind</th><th>worker</th><th>state</th><th>start</th><th>seconds</th><th>fetched</th></tr>`)
	var t0 time.Time
	if len(ts.Events) > 0 {
		t0 = ts.start()
	}
	for i, e := range ts.Events {
		if i == 200 {
			fmt.Fprintf(&b, `<tr><td colspan="7">… %d more</td></tr>`, len(ts.Events)-200)
			break
		}
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>+%.3f s</td><td>%.4f</td><td>%s</td></tr>",
			html.EscapeString(e.Key), html.EscapeString(e.Prefix), html.EscapeString(e.Worker), e.State,
			e.Start.Sub(t0).Seconds(), e.Stop.Sub(e.Start).Seconds(), formatBytes(uint64(e.FetchBytes)))
	}
	b.WriteString("</table>")
	return b.String()
}

func (ts *TaskStream) start() time.Time {
	t0 := ts.Events[0].Start
	for _, e := range ts.Events {
		if e.Start.Before(t0) {
			t0 = e.Start
		}
	}
	return t0
}

// SVG draws the stream: a row per worker, a bar per task from its start to its stop.
func (ts *TaskStream) SVG() string {
	const width, rowH, left = 760.0, 18.0, 110.0
	if len(ts.Events) == 0 {
		return `<svg xmlns="http://www.w3.org/2000/svg" width="760" height="24"><text x="4" y="16" font-family="sans-serif" font-size="12">no tasks</text></svg>`
	}
	t0 := ts.start()
	t1 := ts.Events[0].Stop
	workers := map[string]int{}
	for _, e := range ts.Events {
		if e.Stop.After(t1) {
			t1 = e.Stop
		}
		workers[e.Worker] = 0
	}
	names := sortedKeys(workers)
	for i, n := range names {
		workers[n] = i
	}
	kinds := sortedKeys(ts.Kinds())
	colour := map[string]string{}
	for i, k := range kinds {
		colour[k] = palette[i%len(palette)]
	}
	span := t1.Sub(t0).Seconds()
	if span <= 0 {
		span = 1e-3
	}
	h := rowH*float64(len(names)) + 40
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" font-family="sans-serif" font-size="11">`, width, h)
	for i, n := range names {
		fmt.Fprintf(&b, `<text x="4" y="%.1f">%s</text>`, rowH*float64(i)+13, html.EscapeString(n))
	}
	for _, e := range ts.Events {
		x := left + (width-left-10)*e.Start.Sub(t0).Seconds()/span
		w := max((width-left-10)*e.Stop.Sub(e.Start).Seconds()/span, 1)
		col := colour[e.Prefix]
		if e.State == StateErred {
			col = "#000"
		}
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.0f" fill="%s"><title>%s on %s, %.4f s</title></rect>`,
			x, rowH*float64(workers[e.Worker])+2, w, rowH-4, col, html.EscapeString(e.Key), html.EscapeString(e.Worker), e.Stop.Sub(e.Start).Seconds())
	}
	y := rowH*float64(len(names)) + 14
	fmt.Fprintf(&b, `<text x="%.0f" y="%.1f">0 s</text><text x="%.0f" y="%.1f" text-anchor="end">%.3f s</text>`, left, y, width-10, y, span)
	x := left
	for _, k := range kinds {
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.1f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.1f">%s</text>`, x, y+6, colour[k], x+13, y+15, html.EscapeString(k))
		x += 13 + 7*float64(len(k)) + 12
	}
	b.WriteString(`</svg>`)
	return b.String()
}

var palette = []string{"#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"}

// progressBars renders one bar per kind: done of total.
func progressBars(kinds []string, done, total, erred map[string]int) string {
	var b strings.Builder
	b.WriteString(`<div style="font-family:monospace;font-size:12px">`)
	for _, k := range kinds {
		pct := 0.0
		if total[k] > 0 {
			pct = 100 * float64(done[k]) / float64(total[k])
		}
		col := "#2a7"
		if erred[k] > 0 {
			col = "#c33"
		}
		fmt.Fprintf(&b, `<div><span style="display:inline-block;width:160px">%s</span>`+
			`<span style="display:inline-block;width:240px;height:10px;background:#ddd;vertical-align:middle">`+
			`<span style="display:block;width:%.0f%%;height:10px;background:%s"></span></span> %d / %d`,
			html.EscapeString(k), pct, col, done[k], total[k])
		if erred[k] > 0 {
			fmt.Fprintf(&b, ` (%d erred)`, erred[k])
		}
		b.WriteString(`</div>`)
	}
	b.WriteString(`</div>`)
	return b.String()
}

// Progress shows a live display with one bar per kind of task (the function's name, or
// "array" for an ArrayFuture), updated in place until every future is done, as dask's
// progress. xs are futures, slices of futures, or ArrayFutures. It returns when all are done
// (or the cell is interrupted), with the failures counted in the bars.
func (c *Client) Progress(xs ...any) error {
	var fs []*Future
	var afs []*ArrayFuture
	var add func(x any) error
	add = func(x any) error {
		switch v := x.(type) {
		case *Future:
			fs = append(fs, v)
		case []*Future:
			fs = append(fs, v...)
		case *ArrayFuture:
			afs = append(afs, v)
		case []any:
			for _, y := range v {
				if err := add(y); err != nil {
					return err
				}
			}
		default:
			return fmt.Errorf("cluster: Progress: a %T is not a future or an ArrayFuture", x)
		}
		return nil
	}
	for _, x := range xs {
		if err := add(x); err != nil {
			return err
		}
	}
	ctx := cellContext()
	var h *display.Handle
	last := ""
	for {
		done, total, erred := map[string]int{}, map[string]int{}, map[string]int{}
		all := true
		for _, f := range fs {
			k := keyPrefix(f.Key())
			total[k]++
			switch f.Status() {
			case StateMemory:
				done[k]++
			case StateErred, StateCancelled:
				done[k]++
				erred[k]++
			default:
				all = false
			}
		}
		for _, af := range afs {
			d, t := af.Progress()
			if af.Done() {
				if af.Status() == "error" {
					erred["array"]++
				}
				if t == 0 {
					t, d = 1, 1
				}
				d = t
			} else {
				all = false
			}
			done["array"] += d
			total["array"] += t
		}
		out := progressBars(sortedKeys(total), done, total, erred)
		if h == nil {
			h = display.HTML(out)
		} else if out != last {
			h.Update(out)
		}
		last = out
		if all {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("cluster: Progress: %w", ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// PerformanceReport runs fn and writes a standalone HTML file to path about what the cluster
// did meanwhile, as dask's performance_report: the task stream (chart and table), each
// worker's memory over time, the bytes workers fetched from peers, and the source of the
// functions that ran. fn's error is returned (the report is written either way).
func (c *Client) PerformanceReport(path string, fn func() error) error {
	start := time.Now()
	ferr := fn()
	stop := time.Now()
	r, err := c.ctlCall(cellContext(), &ctlMsg{Op: "history", Since: start})
	if err != nil {
		return err
	}
	page := performanceHTML(start, stop, r)
	if err := os.WriteFile(path, []byte(page), 0o644); err != nil {
		return fmt.Errorf("cluster: PerformanceReport: %w", err)
	}
	if ferr != nil {
		return fmt.Errorf("cluster: PerformanceReport: the measured function: %w", ferr)
	}
	return nil
}

// historySince answers the report's request: the stream, the workers' samples and the sources of
// the shipped functions since m.Since.
func (s *scheduler) historySince(m *ctlMsg) *ctlReply {
	r := s.taskStream(m.Since)
	s.mu.Lock()
	defer s.mu.Unlock()
	r.Samples = map[string][]Sample{}
	for name, h := range s.history {
		i := sort.Search(len(h), func(i int) bool { return !h[i].Time.Before(m.Since) })
		if i < len(h) {
			r.Samples[name] = append([]Sample(nil), h[i:]...)
		}
	}
	r.Sources = map[string]string{}
	for _, e := range r.Stream {
		if src, ok := s.sources[e.Prefix]; ok {
			r.Sources[e.Prefix] = src
		}
	}
	return r
}

func performanceHTML(start, stop time.Time, r *ctlReply) string {
	ts := &TaskStream{Events: r.Stream}
	var b strings.Builder
	b.WriteString("<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>gpunotes performance report</title>" +
		"<style>body{font-family:sans-serif;margin:20px}table{border-collapse:collapse}td,th{padding:2px 8px;border-bottom:1px solid #eee;text-align:left}pre{background:#f6f6f6;padding:8px}</style></head><body>\n")
	fmt.Fprintf(&b, "<h1>Performance report</h1><p>%s to %s (%.3f s), %d tasks.</p>\n",
		start.Format(time.RFC3339), stop.Format(time.RFC3339), stop.Sub(start).Seconds(), len(ts.Events))
	b.WriteString("<h2>Task stream</h2>\n")
	b.WriteString(ts.HTML())
	b.WriteString("\n<h2>Worker memory</h2>\n")
	names := sortedKeys(r.Samples)
	if len(names) == 0 {
		b.WriteString("<p>no worker reported during the period</p>")
	}
	for _, n := range names {
		hs := r.Samples[n]
		xs := make([]float64, len(hs))
		var rss, gpu []float64
		for i, h := range hs {
			xs[i] = h.Time.Sub(start).Seconds()
			rss = append(rss, float64(h.RSS)/(1<<20))
			gpu = append(gpu, float64(h.GPUMemUsed)/(1<<20))
		}
		series := []display.Series{{Name: "host RSS (MiB)", Values: rss}}
		if hs[0].GPUUtil >= 0 {
			series = append(series, display.Series{Name: "GPU memory (MiB)", Values: gpu})
		}
		if len(xs) > 1 {
			b.WriteString(display.LineChart{Title: n, X: xs, Series: series, XLabel: "s", YLabel: "MiB"}.SVG())
		} else {
			fmt.Fprintf(&b, "<p>%s: RSS %s</p>", html.EscapeString(n), formatBytes(hs[0].RSS))
		}
	}
	b.WriteString("\n<h2>Transfers</h2>\n<table><tr><th>worker</th><th>tasks that fetched inputs</th><th>bytes fetched from peers</th><th>seconds</th></tr>")
	type tr struct {
		n     int
		bytes int64
		secs  float64
	}
	per := map[string]*tr{}
	for _, e := range ts.Events {
		t := per[e.Worker]
		if t == nil {
			t = &tr{}
			per[e.Worker] = t
		}
		if e.FetchBytes > 0 {
			t.n++
			t.bytes += e.FetchBytes
			t.secs += e.FetchSeconds
		}
	}
	for _, w := range sortedKeys(per) {
		t := per[w]
		fmt.Fprintf(&b, "<tr><td>%s</td><td>%d</td><td>%s</td><td>%.4f</td></tr>", html.EscapeString(w), t.n, formatBytes(uint64(t.bytes)), t.secs)
	}
	b.WriteString("</table>\n<h2>Code</h2>\n")
	if len(r.Sources) == 0 {
		b.WriteString("<p>no shipped functions ran (array chunks only)</p>")
	}
	for _, k := range sortedKeys(r.Sources) {
		fmt.Fprintf(&b, "<h3>%s</h3><pre>%s</pre>\n", html.EscapeString(k), html.EscapeString(r.Sources[k]))
	}
	b.WriteString("</body></html>\n")
	return b.String()
}

// WorkerLogs on a local cluster adds each worker process's last output lines (its stderr
// and stdout, where prints of shipped functions go) to what the workers logged.
func (c *LocalCUDA) WorkerLogs(n int) (map[string][]string, error) {
	out, err := c.Client.WorkerLogs(n)
	if out == nil {
		out = map[string][]string{}
	}
	c.mu.Lock()
	for _, nn := range c.nannies {
		nn.mu.Lock()
		t := nn.log
		nn.mu.Unlock()
		if t == nil {
			continue
		}
		if s := t.String(); s != "" {
			lines := strings.Split(s, "\n")
			if n > 0 && len(lines) > n {
				lines = lines[len(lines)-n:]
			}
			for _, l := range lines {
				out[nn.spec.name] = append(out[nn.spec.name], "output: "+l)
			}
		}
	}
	c.mu.Unlock()
	return out, err
}
