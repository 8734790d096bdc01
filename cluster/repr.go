package cluster

import (
	"fmt"
	"html"
	"sort"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/display"
)

func htmlEscape(s string) string { return html.EscapeString(s) }

func sortedStrings(s []string) []string {
	sort.Strings(s)
	return s
}

// WorkerInfo is one worker as the scheduler sees it.
type WorkerInfo struct {
	Name              string
	Address           string
	PID               int
	Host              string
	GPU               string // UUID of its GPU or MIG instance ("" for a CPU worker)
	GPUName           string
	GPULabel          string // "GPU 0", "GPU 1 MIG 2"
	NThreads          int
	MemoryLimit       uint64
	DeviceMemoryLimit uint64
	RSS               uint64
	Stored            uint64 // bytes of results held in host memory
	Spilled           uint64 // bytes of results spilled to disk
	DeviceStored      uint64 // bytes of results held in device memory (GPU workers' persisted chunks)
	GPUMemUsed        uint64
	GPUUtil           int // percent; -1 when unknown
	Processing        int // tasks sent to it and not finished
	InMemory          int // results it holds
	TasksDone         int64
	TasksErred        int64
	Restarts          int
	LastDeath         string
	LastSeen          time.Time
	// DataAddress is where peers fetch its results and push shuffle shards ("host:port").
	DataAddress string
	// ShuffleSent and ShuffleReceived are the bytes of shuffle shards it pushed to peers and
	// stored from them (shuffle progress).
	ShuffleSent, ShuffleReceived int64
	// HeldPeak is the most host memory, by the worker's own accounting, that its kept results
	// and its shuffle buffers in flight took at once: what its memory limit bounds.
	HeldPeak uint64
}

// WorkerInfo lists the workers, sorted by name.
func (c *Client) WorkerInfo() []WorkerInfo { return c.s.workerInfo() }

func (s *scheduler) workerInfo() []WorkerInfo {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]WorkerInfo, 0, len(s.workers))
	for _, w := range s.workers {
		d := s.deaths[w.info.Name]
		out = append(out, WorkerInfo{
			Name: w.info.Name, Address: w.addr, PID: w.info.PID, Host: w.info.Host,
			GPU: w.info.GPU, GPUName: w.info.GPUName, GPULabel: w.info.GPULabel, NThreads: w.info.NThreads,
			MemoryLimit: w.info.MemoryLimit, DeviceMemoryLimit: w.info.DeviceMemoryLimit,
			RSS: w.stats.RSS, Stored: w.stats.Stored, Spilled: w.stats.Spilled, DeviceStored: w.stats.Device,
			GPUMemUsed: w.stats.GPUMemUsed, GPUUtil: w.stats.GPUUtil,
			Processing: len(w.processing), InMemory: len(w.memory),
			TasksDone: w.stats.TasksDone, TasksErred: w.stats.TasksErred,
			Restarts: d.restarts, LastDeath: d.reason, LastSeen: w.lastSeen,
			DataAddress: w.dataAddr, ShuffleSent: w.stats.ShuffleSent, ShuffleReceived: w.stats.ShuffleReceived,
			HeldPeak: w.stats.HeldPeak,
		})
		if w.info.GPU == "" {
			out[len(out)-1].GPUUtil = -1
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Address returns the scheduler's address.
func (c *Client) Address() string { return c.s.address() }

// TLS reports whether the connections to the scheduler are under TLS.
func (c *Client) TLS() bool { return c.s.secure() }

// Dashboard returns the URL of the scheduler's live dashboard ("" when it serves none).
func (c *Client) Dashboard() string { return c.s.dashboard() }

func (c *Client) String() string {
	ws := c.WorkerInfo()
	var b strings.Builder
	fmt.Fprintf(&b, "Client: scheduler %s (%s), %d workers\n", c.s.address(), tlsNote(c.TLS(), false), len(ws))
	fmt.Fprintf(&b, "Dashboard: %s\n", dashboardText(c.Dashboard()))
	writeWorkersText(&b, ws)
	return b.String()
}

// HTML renders the client's scheduler and worker table.
func (c *Client) HTML() string {
	ws := c.WorkerInfo()
	dash := ""
	if u := c.Dashboard(); u != "" {
		dash = fmt.Sprintf(`, dashboard <a href="%s" target="_blank">%s</a>`, htmlEscape(u), htmlEscape(u))
	}
	return fmt.Sprintf(`<div style="font-family:sans-serif;font-size:12px"><b>Client</b> scheduler <code>%s</code> (%s), %d workers%s%s</div>`,
		htmlEscape(c.s.address()), tlsNote(c.TLS(), false), len(ws), dash, workersHTML(ws))
}

func writeWorkersText(b *strings.Builder, ws []WorkerInfo) {
	fmt.Fprintf(b, "%-12s %-22s %-8s %-24s %-16s %-8s %-7s %-20s %-10s %-28s %s\n",
		"name", "address", "pid", "gpu", "gpu mem", "util", "tasks", "host mem", "spilled", "results device/host/disk", "shuffle sent/received")
	for _, w := range ws {
		gpu, mem, util := "-", "-", "-"
		if w.GPU != "" {
			gpu = w.GPULabel + " " + w.GPUName
			mem = formatBytes(w.GPUMemUsed) + "/" + formatBytes(w.DeviceMemoryLimit)
			if w.GPUUtil >= 0 {
				util = fmt.Sprintf("%d%%", w.GPUUtil)
			}
		}
		fmt.Fprintf(b, "%-12s %-22s %-8d %-24s %-16s %-8s %-7s %-20s %-10s %-28s %s\n", w.Name, strings.TrimPrefix(w.Address, "tcp://"),
			w.PID, gpu, mem, util, fmt.Sprintf("%d/%d", w.Processing, w.InMemory),
			formatBytes(w.RSS)+"/"+limitText(w.MemoryLimit), formatBytes(w.Spilled), w.results(" / "), w.shuffle(" / "))
	}
}

// results says where the worker's results are: bytes in device memory (— on a CPU worker),
// host memory and on disk.
func (w WorkerInfo) results(sep string) string {
	dev := "—"
	if w.GPU != "" {
		dev = formatBytes(w.DeviceStored)
	}
	return dev + sep + formatBytes(w.Stored) + sep + formatBytes(w.Spilled)
}

// shuffle is the bytes of shuffle shards the worker pushed to peers and received from them.
func (w WorkerInfo) shuffle(sep string) string {
	return formatBytes(uint64(w.ShuffleSent)) + sep + formatBytes(uint64(w.ShuffleReceived))
}

func limitText(b uint64) string {
	if b == 0 {
		return "∞"
	}
	return formatBytes(b)
}

func bar(used, limit uint64) string {
	if limit == 0 {
		return ""
	}
	f := float64(used) / float64(limit)
	if f > 1 {
		f = 1
	}
	color := "#4a8"
	if f > 0.8 {
		color = "#d83"
	}
	return fmt.Sprintf(`<div style="width:80px;height:6px;background:#ddd"><div style="width:%.0f%%;height:6px;background:%s"></div></div>`, 100*f, color)
}

func ago(t time.Time) string {
	d := time.Since(t)
	if d < time.Second {
		return "just now"
	}
	return d.Round(time.Second).String() + " ago"
}

// workersHTML renders the worker table, one row per worker.
func workersHTML(ws []WorkerInfo) string {
	var b strings.Builder
	b.WriteString(`<table style="font-size:12px;border-collapse:collapse"><thead><tr>`)
	for _, h := range []string{"Name", "Address", "PID", "GPU", "Device", "GPU memory", "GPU util", "Tasks (processing / in memory)", "Done", "Host memory", "Spilled", "Results (device / host / disk)", "Shuffle (sent / received)", "Restarts", "Last seen"} {
		fmt.Fprintf(&b, `<th style="text-align:left;padding:2px 6px">%s</th>`, h)
	}
	b.WriteString(`</tr></thead><tbody>`)
	for _, w := range ws {
		gpu, dev, mem, util := "—", "—", "—", "—"
		if w.GPU != "" {
			gpu = htmlEscape(w.GPULabel + ": " + w.GPUName)
			dev = "<code>" + htmlEscape(w.GPU) + "</code>"
			mem = formatBytes(w.GPUMemUsed) + " / " + formatBytes(w.DeviceMemoryLimit) + bar(w.GPUMemUsed, w.DeviceMemoryLimit)
			if w.GPUUtil >= 0 {
				util = fmt.Sprintf("%d%%", w.GPUUtil)
			}
		}
		restarts := "0"
		if w.Restarts > 0 {
			restarts = fmt.Sprintf(`<span title="%s" style="color:#c33">%d</span>`, htmlEscape(w.LastDeath), w.Restarts)
		}
		cells := []string{
			"<b>" + htmlEscape(w.Name) + "</b>", "<code>" + htmlEscape(w.Address) + "</code>", fmt.Sprint(w.PID),
			gpu, dev, mem, util, fmt.Sprintf("%d / %d", w.Processing, w.InMemory), fmt.Sprint(w.TasksDone),
			formatBytes(w.RSS) + " / " + limitText(w.MemoryLimit) + bar(w.RSS, w.MemoryLimit),
			formatBytes(w.Spilled), w.results(" / "), w.shuffle(" / "), restarts, ago(w.LastSeen),
		}
		b.WriteString("<tr>")
		for _, c := range cells {
			fmt.Fprintf(&b, `<td style="text-align:left;padding:2px 6px">%s</td>`, c)
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</tbody></table>")
	return b.String()
}

type clusterSummary struct {
	workers, threads    int
	hostMem, gpuMem     uint64
	processing, memory  int
	done                int64
	restarts            int
	restartDescriptions []string
}

func (c *LocalCUDA) summary(ws []WorkerInfo) clusterSummary {
	var s clusterSummary
	s.workers = len(ws)
	for _, w := range ws {
		s.threads += w.NThreads
		s.hostMem += w.MemoryLimit
		s.gpuMem += w.DeviceMemoryLimit
		s.processing += w.Processing
		s.memory += w.InMemory
		s.done += w.TasksDone
		s.restarts += w.Restarts
		if w.Restarts > 0 {
			s.restartDescriptions = append(s.restartDescriptions, fmt.Sprintf("%s: %d (last: %s)", w.Name, w.Restarts, w.LastDeath))
		}
	}
	return s
}

func (c *LocalCUDA) kind() string {
	for _, sp := range c.specs {
		if sp.slot != nil {
			return "LocalCUDA"
		}
	}
	return "LocalCUDA (CPU workers)"
}

// String is the cluster's text repr: a summary and the worker table.
func (c *LocalCUDA) String() string {
	ws := c.WorkerInfo()
	s := c.summary(ws)
	var b strings.Builder
	fmt.Fprintf(&b, "%s: scheduler %s (%s), %d workers, %d threads, host memory %s, GPU memory %s, MPS %s, started in %v\n",
		c.kind(), c.Address(), tlsNote(c.TLS(), c.opts.TLS.CA != ""), s.workers, s.threads, formatBytes(s.hostMem), formatBytes(s.gpuMem), onOff(c.mps), c.startDur.Round(time.Millisecond))
	fmt.Fprintf(&b, "Dashboard: %s\n", dashboardText(c.Dashboard()))
	writeWorkersText(&b, ws)
	return b.String()
}

// dashboardText is the dashboard's URL for text reprs, or "off".
func dashboardText(u string) string {
	if u == "" {
		return "off"
	}
	return u
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

// HTML is the cluster's repr in a cell: type, scheduler address, workers, threads, memory and
// the worker table.
func (c *LocalCUDA) HTML() string {
	ws := c.WorkerInfo()
	s := c.summary(ws)
	var b strings.Builder
	b.WriteString(`<div style="font-family:sans-serif;font-size:12px">`)
	fmt.Fprintf(&b, `<h4 style="margin:4px 0">%s</h4><table style="font-size:12px">`, htmlEscape(c.kind()))
	row := func(k, v string) {
		fmt.Fprintf(&b, `<tr><td style="text-align:left;padding:1px 8px 1px 0"><b>%s</b></td><td style="text-align:left">%s</td></tr>`, k, v)
	}
	row("Scheduler", "<code>"+htmlEscape(c.Address())+"</code> ("+tlsNote(c.TLS(), c.opts.TLS.CA != "")+")")
	row("Workers", fmt.Sprint(s.workers))
	row("Threads", fmt.Sprint(s.threads))
	row("Host memory", formatBytes(s.hostMem))
	if s.gpuMem > 0 {
		row("GPU memory", formatBytes(s.gpuMem))
	}
	per := c.opts.WorkersPerGPU
	if per > 1 {
		row("Virtual GPUs", fmt.Sprintf("%d workers per GPU, MPS %s", per, onOff(c.mps)))
	}
	if c.gpuErr != nil {
		row("GPUs", htmlEscape("none: "+c.gpuErr.Error()))
	}
	row("Tasks", fmt.Sprintf("%d processing, %d in memory, %d done", s.processing, s.memory, s.done))
	if s.restarts > 0 {
		row("Restarts", htmlEscape(strings.Join(s.restartDescriptions, "; ")))
	}
	row("Started in", c.startDur.Round(time.Millisecond).String())
	if u := c.Dashboard(); u != "" {
		row("Dashboard", fmt.Sprintf(`<a href="%s" target="_blank">%s</a>`, htmlEscape(u), htmlEscape(u)))
	} else {
		row("Dashboard", "off")
	}
	b.WriteString("</table>")
	b.WriteString(workersHTML(ws))
	b.WriteString("</div>")
	return b.String()
}

// Watch shows the cluster's table in the cell and keeps it updated in place
// (update_display_data) until the cluster closes: at most every 250 ms while tasks run or
// workers change, and every 2 s otherwise.
func (c *LocalCUDA) Watch() {
	h := display.HTML(c.HTML())
	c.watchers.Add(1)
	go func() {
		defer c.watchers.Done()
		last := time.Now()
		tick := time.NewTicker(250 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-c.stopCh:
				h.Update(c.HTML())
				return
			case <-tick.C:
			}
			busy := false
			for _, w := range c.WorkerInfo() {
				if w.Processing > 0 {
					busy = true
				}
			}
			if busy || time.Since(last) >= 2*time.Second {
				h.Update(c.HTML())
				last = time.Now()
			}
		}
	}()
}
