package cluster

import (
	"fmt"
	"strings"

	"github.com/gpunotes/gpunotes/display"
)

// shuffleBytesLabel starts the cell's display of a shuffle's bytes per worker.
const shuffleBytesLabel = "shuffle: bytes per worker, sent / received"

// shuffleBytes is the cell's display of the bytes each worker sent and received in one
// shuffle run, updated as its tasks end (the workers' counters come with their tasks' done
// frames), beside the bars of its tasks.
type shuffleBytes struct {
	c    *Client
	base map[string][2]int64 // each worker's counters when the run began
	h    *display.Handle
}

func newShuffleBytes(c *Client, ws []WorkerInfo) *shuffleBytes {
	b := &shuffleBytes{c: c, base: map[string][2]int64{}}
	for _, w := range ws {
		b.base[w.Name] = [2]int64{w.ShuffleSent, w.ShuffleReceived}
	}
	b.h = display.Show(b.data())
	return b
}

// update redraws the display with the workers' counters now.
func (b *shuffleBytes) update() { b.h.Update(b.data()) }

func (b *shuffleBytes) data() display.Data {
	var text []string
	var rows strings.Builder
	for _, w := range b.c.WorkerInfo() {
		base, ok := b.base[w.Name]
		if !ok || w.ShuffleSent < base[0] || w.ShuffleReceived < base[1] {
			base = [2]int64{} // joined, or restarted, since the run began
		}
		sent, recv := formatBytes(uint64(w.ShuffleSent-base[0])), formatBytes(uint64(w.ShuffleReceived-base[1]))
		text = append(text, fmt.Sprintf("%s %s / %s", w.Name, sent, recv))
		fmt.Fprintf(&rows, "<tr><td style=\"text-align:left;padding:1px 6px\">%s</td><td style=\"text-align:right;padding:1px 6px\">%s</td><td style=\"text-align:right;padding:1px 6px\">%s</td></tr>",
			htmlEscape(w.Name), sent, recv)
	}
	html := "<table style=\"font-size:smaller\"><caption style=\"text-align:left\">shuffle: bytes per worker</caption>" +
		"<tr><th style=\"text-align:left;padding:1px 6px\">worker</th><th style=\"padding:1px 6px\">sent</th><th style=\"padding:1px 6px\">received</th></tr>" +
		rows.String() + "</table>"
	return display.Data{MIME: map[string]any{"text/plain": shuffleBytesLabel + ": " + strings.Join(text, ", "), "text/html": html}}
}
