package cluster_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/display/widget"
	"github.com/gpunotes/gpunotes/gpuarray"
)

func panelCluster(tb testing.TB) *cluster.LocalCUDA {
	tb.Helper()
	c, err := cluster.NewLocalCUDA(cluster.Options{CPUOnly: true, NWorkers: 2, ThreadsPerWorker: 1, Binary: workerBin, Dashboard: "off"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { c.Close() })
	rs := gpuarray.NewRandomState(3)
	x := rs.Normal(0, 1, gpuarray.Shape(2000, 2000), gpuarray.Chunks(250, 250))
	if _, err := x.Mul(x).Sum().Float64(gpuarray.On(c.Client)); err != nil {
		tb.Fatal(err)
	}
	return c
}

// TestPanelState: after a computation of 64 chunks the panel's snapshot has both workers with
// their memory limits, the computation's tasks in its stream, and no task left unfinished.
func TestPanelState(t *testing.T) {
	c := panelCluster(t)
	st := cluster.PanelStateOf(c)
	if len(st.Workers) != 2 {
		t.Fatalf("workers = %+v", st.Workers)
	}
	for _, w := range st.Workers {
		if w.HostLimit == 0 || w.Threads != 1 || w.Label != "cpu" {
			t.Errorf("worker %+v", w)
		}
	}
	if len(st.Stream) == 0 {
		t.Errorf("the stream has no task after a computation")
	}
	for _, e := range st.Stream {
		if e.Stop < e.Start || e.Start > st.Now || st.Now-e.Stop > 60 {
			t.Fatalf("task %+v outside the snapshot's time %v", e, st.Now)
		}
	}
	for _, p := range st.Progress {
		if p.Done+p.Erred > p.Total {
			t.Errorf("progress %+v", p)
		}
	}
	p := widget.NewPanel(func() widget.PanelState { return cluster.PanelStateOf(c) }, 10*time.Millisecond)
	defer p.Close()
	if s, _ := p.Get("snapshot").(map[string]any); s == nil || len(s["workers"].([]any)) != 2 {
		t.Fatalf("panel snapshot %v", p.Get("snapshot"))
	}
}

// BenchmarkPanelSnapshot is what a panel costs the kernel per poll: the snapshot and its
// JSON. At the default 2 polls a second, core-% is the share of one core it takes.
func BenchmarkPanelSnapshot(b *testing.B) {
	c := panelCluster(b)
	b.ResetTimer()
	size := 0
	for i := 0; i < b.N; i++ {
		st := cluster.PanelStateOf(c)
		buf, _ := json.Marshal(st)
		size = len(buf)
	}
	perPoll := b.Elapsed().Seconds() / float64(b.N)
	b.ReportMetric(100*perPoll*float64(time.Second/widget.DefaultPanelInterval), "core-%")
	b.ReportMetric(float64(size), "bytes/snapshot")
}
