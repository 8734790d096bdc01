package widget

import (
	"encoding/json"
	"sync"
	"time"
)

// PanelState is what a cluster panel draws: a snapshot its data source returns.
type PanelState struct {
	Title    string          `json:"title"`
	Workers  []PanelWorker   `json:"workers"`
	Stream   []PanelTask     `json:"stream"`   // recent tasks, any order
	Window   float64         `json:"window"`   // seconds of task stream shown
	Now      float64         `json:"now"`      // the snapshot's time, Unix seconds
	Progress []PanelProgress `json:"progress"` // one bar per computation
}

// PanelWorker is one worker's memory and load.
type PanelWorker struct {
	Name        string  `json:"name"`
	Label       string  `json:"label"` // "GPU 0", "cpu"
	Threads     int     `json:"threads"`
	DeviceUsed  uint64  `json:"device_used"`
	DeviceLimit uint64  `json:"device_limit"`
	HostUsed    uint64  `json:"host_used"`
	HostLimit   uint64  `json:"host_limit"`
	Spilled     uint64  `json:"spilled"`
	Busy        float64 `json:"busy"`     // running tasks / threads, in [0, 1]
	GPUUtil     int     `json:"gpu_util"` // percent; -1 when unknown
	// ShuffleSent and ShuffleReceived are the bytes of shuffle shards it pushed to peers and
	// received from them.
	ShuffleSent     int64 `json:"shuffle_sent"`
	ShuffleReceived int64 `json:"shuffle_received"`
}

// PanelTask is one task of the stream: when it started and stopped, Unix seconds.
type PanelTask struct {
	Worker string  `json:"worker"`
	Kind   string  `json:"kind"`
	Start  float64 `json:"start"`
	Stop   float64 `json:"stop"`
	Erred  bool    `json:"erred,omitempty"`
}

// PanelProgress is one computation's progress.
type PanelProgress struct {
	Name  string `json:"name"`
	Done  int    `json:"done"`
	Total int    `json:"total"`
	Erred int    `json:"erred"`
}

// Panel is a live panel of a cluster (the in-notebook counterpart of dask-labextension's
// panes), a custom widget in the anywidget form: it polls its data source at a bounded rate
// and sends a snapshot only when it changed.
type Panel struct {
	*AnyWidget
	stop     chan struct{}
	stopOnce sync.Once
}

// DefaultPanelInterval is how often a panel polls its source unless told otherwise.
const DefaultPanelInterval = 500 * time.Millisecond

// NewPanel shows snapshots of source every interval (DefaultPanelInterval for 0) until Close.
func NewPanel(source func() PanelState, interval time.Duration) *Panel {
	if interval <= 0 {
		interval = DefaultPanelInterval
	}
	first := source()
	p := &Panel{AnyWidget: NewAnyWidget(panelESM, T{"snapshot": first, "_anywidget_id": "gpunotes.Panel"}), stop: make(chan struct{})}
	last, _ := json.Marshal(first)
	go func() {
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
			}
			st := source()
			b, err := json.Marshal(st)
			if err != nil || string(b) == string(last) {
				continue
			}
			last = b
			p.Set("snapshot", st)
		}
	}()
	return p
}

// Close stops the panel's updates and closes its widget.
func (p *Panel) Close() {
	p.stopOnce.Do(func() { close(p.stop) })
	p.AnyWidget.Close()
}

const panelESM = `
function fmt(b) {
  if (!b) return "0";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"]; let i = 0;
  while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
  return b.toFixed(b >= 10 || i === 0 ? 0 : 1) + " " + u[i];
}
function bar(used, limit, color, title) {
  const f = limit > 0 ? Math.min(1, used / limit) : 0;
  return '<div title="' + title + '" style="position:relative;height:14px;background:#eee;border-radius:2px;margin:1px 0">' +
    '<div style="width:' + (100 * f).toFixed(1) + '%;height:100%;background:' + color + ';border-radius:2px"></div>' +
    '<span style="position:absolute;left:4px;top:0;font-size:10px;line-height:14px">' + title + '</span></div>';
}
function color(kind) {
  let h = 0;
  for (const c of kind) h = (h * 31 + c.charCodeAt(0)) % 360;
  return "hsl(" + h + ",60%,55%)";
}
function draw(el, s) {
  if (!s) return;
  let h = '<div class="gpunotes-panel" style="font-family:sans-serif;font-size:12px;max-width:900px">';
  h += '<b>' + (s.title || "cluster") + '</b>';
  h += '<table style="width:100%;border-collapse:collapse"><tr><th align=left>worker</th><th>device memory</th><th>host memory</th><th>spilled</th><th>shuffle sent / received</th><th>CPU</th><th>GPU</th></tr>';
  for (const w of s.workers || []) {
    h += '<tr class="panel-worker"><td>' + w.name + ' <small>' + (w.label || "") + '</small></td>' +
      '<td style="width:25%">' + (w.device_limit ? bar(w.device_used, w.device_limit, "#76b900", fmt(w.device_used) + " / " + fmt(w.device_limit)) : "-") + '</td>' +
      '<td style="width:25%">' + bar(w.host_used, w.host_limit, "#4c78a8", fmt(w.host_used) + " / " + fmt(w.host_limit)) + '</td>' +
      '<td>' + fmt(w.spilled) + '</td>' +
      '<td class="panel-shuffle">' + fmt(w.shuffle_sent || 0) + " / " + fmt(w.shuffle_received || 0) + '</td>' +
      '<td style="width:10%">' + bar(w.busy, 1, "#f58518", (100 * w.busy).toFixed(0) + "%") + '</td>' +
      '<td style="width:10%">' + (w.gpu_util >= 0 ? bar(w.gpu_util, 100, "#76b900", w.gpu_util + "%") : "-") + '</td></tr>';
  }
  h += '</table>';
  const win = s.window || 10, lanes = [], W = 860;
  const tasks = (s.stream || []).slice().sort((a, b) => a.start - b.start);
  let rects = "";
  for (const t of tasks) {
    let lane = lanes.findIndex(l => l.worker === t.worker && l.free <= t.start);
    if (lane < 0) { lanes.push({ worker: t.worker, free: 0 }); lane = lanes.length - 1; }
    lanes[lane].free = t.stop;
    const a = s.now - t.start, b = s.now - t.stop;
    if (b > win) continue;
    const x = W * (1 - Math.min(win, a) / win), x2 = W * (1 - Math.max(0, b) / win);
    rects += '<rect class="panel-task" x="' + x.toFixed(1) + '" y="' + (lane * 12) + '" width="' + Math.max(1, x2 - x).toFixed(1) +
      '" height="10" fill="' + (t.erred ? "#d62728" : color(t.kind)) + '"><title>' + t.kind + ' on ' + t.worker + '</title></rect>';
  }
  h += '<div>task stream (last ' + win + ' s)</div><svg width="' + W + '" height="' + Math.max(12, lanes.length * 12) + '" style="background:#fafafa">' + rects + '</svg>';
  for (const p of s.progress || []) {
    h += bar(p.done, p.total, p.erred ? "#d62728" : "#54a24b", p.name + ": " + p.done + " / " + p.total + (p.erred ? " (" + p.erred + " erred)" : ""));
  }
  el.innerHTML = h + '</div>';
}
export default {
  render({ model, el }) {
    const update = () => draw(el, model.get("snapshot"));
    model.on("change:snapshot", update);
    update();
    return () => model.off("change:snapshot", update);
  }
};
`
