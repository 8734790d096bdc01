package kube

import (
	"context"
	"fmt"
	"html"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
)

// HTML is the cluster's repr in a cell: the Deployment, the scheduler address, and each worker
// pod with its phase, node and reason next to the workers it runs (when Connect was called).
func (c *Cluster) HTML() string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	esc := html.EscapeString
	var b strings.Builder
	b.WriteString(`<div style="font-family:sans-serif;font-size:12px"><h4 style="margin:4px 0">Kubernetes cluster</h4><table style="font-size:12px">`)
	row := func(k, v string) {
		fmt.Fprintf(&b, `<tr><td style="text-align:left;padding:1px 8px 1px 0"><b>%s</b></td><td style="text-align:left">%s</td></tr>`, k, v)
	}
	row("Deployment", "<code>"+esc(c.opts.Namespace+"/"+c.opts.Name)+"</code>")
	row("Scheduler", "<code>"+esc(c.opts.Scheduler)+"</code>")
	if n, err := c.Replicas(ctx); err == nil {
		row("Replicas", fmt.Sprint(n))
	} else {
		row("Replicas", esc(err.Error()))
	}
	pods, err := c.Pods(ctx)
	if err != nil {
		row("Pods", esc(err.Error()))
	}
	b.WriteString(`</table><table style="font-size:12px;border-collapse:collapse"><thead><tr>`)
	for _, h := range []string{"Pod", "Phase", "Node", "Reason", "Worker", "Address", "GPU", "Tasks (processing / in memory)"} {
		fmt.Fprintf(&b, `<th style="text-align:left;padding:2px 6px">%s</th>`, h)
	}
	b.WriteString("</tr></thead><tbody>")
	byPod := map[string][]cluster.WorkerInfo{}
	if c.client != nil {
		for _, w := range c.client.WorkerInfo() {
			for _, p := range pods {
				if strings.HasPrefix(w.Name, p.Name+"-") {
					byPod[p.Name] = append(byPod[p.Name], w)
				}
			}
		}
	}
	for _, p := range pods {
		base := []string{"<b>" + esc(p.Name) + "</b>", esc(p.Phase), esc(p.Node), esc(p.Reason)}
		ws := byPod[p.Name]
		if len(ws) == 0 {
			ws = []cluster.WorkerInfo{{}}
		}
		for _, w := range ws {
			cells := append([]string(nil), base...)
			if w.Name == "" {
				cells = append(cells, "<i>no worker</i>", "", "", "")
			} else {
				gpu := "—"
				if w.GPU != "" {
					gpu = esc(w.GPULabel + ": " + w.GPUName)
				}
				cells = append(cells, esc(w.Name), "<code>"+esc(w.Address)+"</code>", gpu, fmt.Sprintf("%d / %d", w.Processing, w.InMemory))
			}
			b.WriteString("<tr>")
			for _, cell := range cells {
				fmt.Fprintf(&b, `<td style="text-align:left;padding:2px 6px">%s</td>`, cell)
			}
			b.WriteString("</tr>")
		}
	}
	b.WriteString("</tbody></table></div>")
	return b.String()
}
