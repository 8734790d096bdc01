package slurm

import (
	"context"
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
)

// row is one line of the job table: a job and one of its workers (or none yet).
type row struct {
	job    Job
	worker *cluster.WorkerInfo
}

// rows pairs jobs with their workers, in submission order; workers of no known job come last.
func (c *Cluster) rows() []row {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = c.Refresh(ctx) // the repr shows the last known states when squeue fails
	ws := c.WorkerInfo()
	byJob := map[string][]cluster.WorkerInfo{}
	for _, w := range ws {
		id := c.jobOfWorker(w.Name)
		byJob[id] = append(byJob[id], w)
	}
	var out []row
	seen := map[string]bool{}
	for _, j := range c.Jobs() {
		seen[j.ID] = true
		if len(byJob[j.ID]) == 0 {
			if !terminal(j.State) || !j.Cancelled {
				out = append(out, row{job: j})
			}
			continue
		}
		for i := range byJob[j.ID] {
			out = append(out, row{job: j, worker: &byJob[j.ID][i]})
		}
	}
	for id, list := range byJob {
		if seen[id] {
			continue
		}
		for i := range list {
			out = append(out, row{job: Job{ID: "—", State: "not a job of this cluster"}, worker: &list[i]})
		}
	}
	return out
}

func (c *Cluster) summaryLines(rs []row) [][2]string {
	states := map[string]int{}
	var order []string
	workers := 0
	for _, j := range c.Jobs() {
		if j.Cancelled && terminal(j.State) {
			continue
		}
		if states[j.State] == 0 {
			order = append(order, j.State)
		}
		states[j.State]++
	}
	for _, r := range rs {
		if r.worker != nil {
			workers++
		}
	}
	var js []string
	for _, s := range order {
		js = append(js, fmt.Sprintf("%d %s", states[s], strings.ToLower(s)))
	}
	jobs := "none"
	if len(js) > 0 {
		jobs = strings.Join(js, ", ")
	}
	c.mu.Lock()
	adapt := "off"
	if c.adaptStop != nil {
		adapt = fmt.Sprintf("%d to %d workers", c.adaptMin, c.adaptMax)
		if c.adaptErr != nil {
			adapt += " (last error: " + c.adaptErr.Error() + ")"
		}
	}
	closed := c.closed
	c.mu.Unlock()
	gpus := "none (CPU workers)"
	if c.opts.GPUsPerJob > 0 {
		gpus = fmt.Sprintf("%d per job, one worker each", c.opts.GPUsPerJob)
	}
	transport := "plaintext"
	if c.opts.TLS.Enabled() {
		transport = "TLS"
		if c.opts.TLS.CA != "" {
			transport = "TLS, mutual"
		}
	}
	lines := [][2]string{
		{"Scheduler", c.addr + " (listening on " + strings.TrimPrefix(c.listen, "tcp://") + ", " + transport + ")"},
		{"Job name", c.name},
		{"Jobs", jobs},
		{"Workers", fmt.Sprint(workers)},
		{"GPUs", gpus},
		{"Adaptive", adapt},
	}
	if c.dash != "" {
		lines = append(lines, [2]string{"Dashboard", c.dash})
	}
	if closed {
		lines = append(lines, [2]string{"State", "closed"})
	}
	return lines
}

func jobState(j Job) string {
	s := j.State
	if j.Cancelled && !terminal(j.State) {
		s += " (cancelling)"
	}
	if j.Reason != "" && j.Reason != "None" {
		s += " (" + j.Reason + ")"
	}
	return s
}

// String is the cluster's text repr: a summary and one line per job and worker.
func (c *Cluster) String() string {
	rs := c.rows()
	var b strings.Builder
	b.WriteString("SLURM cluster\n")
	for _, l := range c.summaryLines(rs) {
		fmt.Fprintf(&b, "  %-10s %s\n", l[0]+":", l[1])
	}
	fmt.Fprintf(&b, "%-10s %-28s %-12s %-28s %-22s %-7s\n", "job", "state", "node", "worker", "address", "tasks")
	for _, r := range rs {
		name, addr, tasks := "-", "-", "-"
		if w := r.worker; w != nil {
			name, addr, tasks = w.Name, strings.TrimPrefix(w.Address, "tcp://"), fmt.Sprintf("%d/%d", w.Processing, w.InMemory)
		}
		fmt.Fprintf(&b, "%-10s %-28s %-12s %-28s %-22s %-7s\n", r.job.ID, jobState(r.job), orDash(r.job.Nodes), name, addr, tasks)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" || s == "(null)" {
		return "-"
	}
	return s
}

var stateColor = map[string]string{"RUNNING": "#2a7", "PENDING": "#c80", "COMPLETING": "#888", "CANCELLED": "#888", "ENDED": "#888"}

// HTML is the cluster's repr in a cell: the scheduler, the job name, the jobs by state, and a
// table with each job's id and state next to its workers.
func (c *Cluster) HTML() string {
	rs := c.rows()
	esc := html.EscapeString
	var b strings.Builder
	b.WriteString(`<div style="font-family:sans-serif;font-size:12px"><h4 style="margin:4px 0">SLURM cluster</h4><table style="font-size:12px">`)
	for _, l := range c.summaryLines(rs) {
		v := esc(l[1])
		if l[0] == "Scheduler" || l[0] == "Job name" {
			v = "<code>" + v + "</code>"
		}
		fmt.Fprintf(&b, `<tr><td style="text-align:left;padding:1px 8px 1px 0"><b>%s</b></td><td style="text-align:left">%s</td></tr>`, esc(l[0]), v)
	}
	b.WriteString(`</table><table style="font-size:12px;border-collapse:collapse"><thead><tr>`)
	for _, h := range []string{"Job", "Job state", "Node", "Worker", "Address", "GPU", "Threads", "Tasks (processing / in memory)", "Done", "Host memory"} {
		fmt.Fprintf(&b, `<th style="text-align:left;padding:2px 6px">%s</th>`, h)
	}
	b.WriteString(`</tr></thead><tbody>`)
	for _, r := range rs {
		color := stateColor[r.job.State]
		if color == "" {
			color = "#c33"
		}
		cells := []string{"<b>" + esc(r.job.ID) + "</b>",
			fmt.Sprintf(`<span style="color:%s">%s</span>`, color, esc(jobState(r.job))), esc(orDash(r.job.Nodes))}
		if w := r.worker; w != nil {
			gpu := "—"
			if w.GPU != "" {
				gpu = esc(w.GPULabel + ": " + w.GPUName)
			}
			cells = append(cells, "<b>"+esc(w.Name)+"</b>", "<code>"+esc(w.Address)+"</code>", gpu, fmt.Sprint(w.NThreads),
				fmt.Sprintf("%d / %d", w.Processing, w.InMemory), fmt.Sprint(w.TasksDone), formatBytes(w.RSS)+" / "+formatBytes(w.MemoryLimit))
		} else {
			cells = append(cells, "<i>no worker yet</i>", "", "", "", "", "", "")
		}
		b.WriteString("<tr>")
		for _, cell := range cells {
			fmt.Fprintf(&b, `<td style="text-align:left;padding:2px 6px">%s</td>`, cell)
		}
		b.WriteString("</tr>")
	}
	b.WriteString("</tbody></table></div>")
	return b.String()
}

func formatBytes(n uint64) string {
	if n == 0 {
		return "0 B"
	}
	units := []string{"B", "KiB", "MiB", "GiB", "TiB"}
	f := float64(n)
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	if i == 0 {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}
