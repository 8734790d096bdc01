package cluster_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/dataframe"
	"github.com/gpunotes/gpunotes/display"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestShuffleProgressShown shuffles a frame on three workers and checks that, as soon as the
// shuffle returns, each worker's shuffle bytes are in WorkerInfo, the cell's display of the
// shuffle's bytes per worker, the dashboard's state, the cluster's HTML and text reprs and
// the panel's snapshot, and that what the workers sent is what they received.
func TestShuffleProgressShown(t *testing.T) {
	c := newCluster(t, cluster.Options{NWorkers: 3})
	for _, w := range c.WorkerInfo() {
		if w.ShuffleSent != 0 || w.ShuffleReceived != 0 {
			t.Fatalf("worker %s counts shuffle bytes before any shuffle: %+v", w.Name, w)
		}
	}
	const rows = 6000
	k := make([]int64, rows)
	x := make([]float64, rows)
	for i := range k {
		k[i], x[i] = int64(i*7919%613), float64(i)
	}
	f := dataframe.FromSlices([]string{"k", "x"}, []any{k, x}, dataframe.NPartitions(6))
	cell := &barSink{last: map[string]string{}}
	restore := display.Bind(context.Background(), cell)
	got, err := f.Shuffle([]string{"k"}, 6, gpuarray.On(c))
	restore()
	if err != nil {
		t.Fatal(err)
	}
	// The cell's bars end full: 6 input partitions sent, 6 output partitions of each column
	// shuffled (the frame's two and any the frame adds).
	if b := cell.last["shuffle: input partitions sent"]; !strings.Contains(b, "6/6 (100%)") {
		t.Errorf("the cell's transfer bar ends at %q (bars %v)", b, cell.last)
	}
	var done, total int
	b := cell.last["shuffle: output pieces stored"]
	if _, err := fmt.Sscanf(b, "shuffle: output pieces stored: %d/%d (100%%)", &done, &total); err != nil || done != total || total < 12 || total%6 != 0 {
		t.Errorf("the cell's unpack bar ends at %q (bars %v)", b, cell.last)
	}
	if !strings.Contains(got.Path(), "worker to worker") {
		t.Fatalf("path %q: not shuffled on the workers", got.Path())
	}
	ws := c.WorkerInfo()
	var sent, recv int64
	senders, receivers := 0, 0
	for _, w := range ws {
		sent += w.ShuffleSent
		recv += w.ShuffleReceived
		if w.ShuffleSent > 0 {
			senders++
		}
		if w.ShuffleReceived > 0 {
			receivers++
		}
	}
	// Every row's key and value moved once (16 bytes a row), and what was sent was received.
	if sent < 16*rows || recv != sent || senders == 0 || receivers == 0 {
		t.Fatalf("shuffle bytes: sent %d by %d workers, received %d by %d, want at least %d", sent, senders, recv, receivers, 16*rows)
	}

	cellBytes := cell.last["shuffle: bytes per worker, sent / received"]
	st := dashState(t, c.Dashboard())
	resp, err := http.Get(c.Dashboard())
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(page), "<th>Shuffle (sent / received)</th>") || !strings.Contains(string(page), "w.ShuffleSent") {
		t.Fatal("the dashboard page has no shuffle column")
	}
	html, text := c.HTML(), c.String()
	ps := cluster.PanelStateOf(c)
	if !strings.Contains(html, "Shuffle (sent / received)") || !strings.Contains(text, "shuffle sent/received") {
		t.Fatalf("the reprs have no shuffle column:\n%s\n%s", html, text)
	}
	for _, w := range ws {
		if w.ShuffleSent == 0 && w.ShuffleReceived == 0 {
			continue
		}
		var dw *cluster.WorkerInfo
		for i := range st.Workers {
			if st.Workers[i].Name == w.Name {
				dw = &st.Workers[i]
			}
		}
		if dw == nil || dw.ShuffleSent != w.ShuffleSent || dw.ShuffleReceived != w.ShuffleReceived {
			t.Errorf("dashboard state of %s: %+v, want sent %d received %d", w.Name, dw, w.ShuffleSent, w.ShuffleReceived)
		}
		cell := fmt.Sprintf("%s / %s", cluster.FormatBytes(uint64(w.ShuffleSent)), cluster.FormatBytes(uint64(w.ShuffleReceived)))
		// The cell's display of this shuffle's bytes ends with each worker's (its first).
		if b := cellBytes; !strings.Contains(b, w.Name+" "+cell) {
			t.Errorf("the cell's bytes per worker end at %q, want %s's %q", b, w.Name, cell)
		}
		if !strings.Contains(html, "<td style=\"text-align:left;padding:2px 6px\">"+cell+"</td>") || !strings.Contains(text, cell) {
			t.Errorf("the reprs do not show %s's shuffle bytes %q:\n%s\n%s", w.Name, cell, html, text)
		}
		found := false
		for _, pw := range ps.Workers {
			if pw.Name == w.Name {
				found = pw.ShuffleSent == w.ShuffleSent && pw.ShuffleReceived == w.ShuffleReceived
			}
		}
		if !found {
			t.Errorf("the panel's snapshot does not show %s's shuffle bytes: %+v", w.Name, ps.Workers)
		}
	}
}

// barSink is a cell that keeps the last text of each progress bar, by label.
type barSink struct {
	mu   sync.Mutex
	last map[string]string
}

func (s *barSink) Display(d display.Data, update bool) {
	text, _ := d.MIME["text/plain"].(string)
	i := strings.LastIndex(text, ": ") // a bar's text is "label: done/total (pct) elapsed"
	if i < 0 {
		return
	}
	label := text[:i]
	s.mu.Lock()
	s.last[label] = text
	s.mu.Unlock()
}

func (s *barSink) Clear(bool) {}
