package cluster

import (
	"sort"
	"time"

	"github.com/gpunotes/gpunotes/display/widget"
)

// panelWindow is how much of the task stream a panel shows, and panelTasks at most how many
// tasks of it (the newest), which bounds a snapshot's size.
const (
	panelWindow = 10 * time.Second
	panelTasks  = 500
)

func unix(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// Panel shows the cluster as a live widget in the notebook: each worker's device and host
// memory with their limits and what it spilled, its CPU and GPU load, the task stream (a row
// per worker thread, a block per task coloured by kind) and the progress of each kind of task
// the scheduler tracks, polled from the scheduler's own state twice a second (no server, no
// proxy). Close the panel to stop its updates.
func (c *LocalCUDA) Panel() *widget.Panel {
	return widget.NewPanel(c.panelState, 0)
}

func (c *LocalCUDA) panelState() widget.PanelState {
	st := c.sched.dashboardState(panelWindow)
	ps := widget.PanelState{Title: "LocalCUDA " + st.Scheduler, Window: panelWindow.Seconds(), Now: unix(st.Now),
		Workers: []widget.PanelWorker{}, Stream: []widget.PanelTask{}, Progress: []widget.PanelProgress{}}
	for _, w := range st.Workers {
		label := w.GPULabel
		if label == "" {
			label = "cpu"
		}
		busy := 0.0
		if w.NThreads > 0 {
			busy = float64(w.Processing) / float64(w.NThreads)
			if busy > 1 {
				busy = 1
			}
		}
		ps.Workers = append(ps.Workers, widget.PanelWorker{Name: w.Name, Label: label, Threads: w.NThreads,
			DeviceUsed: w.GPUMemUsed, DeviceLimit: w.DeviceMemoryLimit, HostUsed: w.RSS, HostLimit: w.MemoryLimit,
			Spilled: w.Spilled, Busy: busy, GPUUtil: w.GPUUtil, ShuffleSent: w.ShuffleSent, ShuffleReceived: w.ShuffleReceived})
	}
	ev := st.Stream
	if len(ev) > panelTasks {
		ev = ev[len(ev)-panelTasks:]
	}
	for _, e := range ev {
		ps.Stream = append(ps.Stream, widget.PanelTask{Worker: e.Worker, Kind: e.Prefix,
			Start: unix(e.Start), Stop: unix(e.Stop), Erred: e.State == StateErred})
	}
	// Progress by kind of task (the key's prefix): the tasks the scheduler still tracks.
	byKind := map[string]*widget.PanelProgress{}
	s := c.sched
	s.mu.Lock()
	for _, t := range s.tasks {
		k := keyPrefix(t.key)
		p := byKind[k]
		if p == nil {
			p = &widget.PanelProgress{Name: k}
			byKind[k] = p
		}
		p.Total++
		switch t.state {
		case StateMemory:
			p.Done++
		case StateErred:
			p.Erred++
		}
	}
	s.mu.Unlock()
	for _, p := range byKind {
		ps.Progress = append(ps.Progress, *p)
	}
	sort.Slice(ps.Progress, func(i, j int) bool { return ps.Progress[i].Name < ps.Progress[j].Name })
	return ps
}
