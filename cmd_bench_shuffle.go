package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// shuffleResult is one JSON line of `bench frame --task shuffle --json`.
type shuffleResult struct {
	Task       string           `json:"task"`
	Rows       int              `json:"rows"`
	Workers    int              `json:"workers"`
	Partitions int              `json:"partitions"`
	Seconds    float64          `json:"seconds"`
	Bytes      int64            `json:"bytes_moved"`
	PeakRSS    map[string]int64 `json:"peak_rss_mib"`
}

// benchShuffle hash-partitions rows of (int64 key, 3 float64) on a local cluster of CPU
// workers, worker to worker (cluster.Client.ShuffleColumns, what Frame.Shuffle on a cluster
// runs): the columns are generated on the workers and persisted there first. Best of 2; peak
// resident memory per worker process (VmHWM) over the whole run.
func benchShuffle(ctx context.Context, rows, workers, parts int, memLimit string, asJSON bool, w io.Writer) error {
	c, err := cluster.NewLocalCUDA(cluster.Options{NWorkers: workers, CPUOnly: true, ThreadsPerWorker: 1, MemoryLimit: memLimit, Dashboard: "off"})
	if err != nil {
		return fmt.Errorf("bench frame shuffle: %w", err)
	}
	defer c.Close()
	opts := []gpuarray.ComputeOption{gpuarray.On(c), gpuarray.WithContext(ctx), gpuarray.NoProgressBar()}
	chunk := gpuarray.Chunks((rows + parts - 1) / parts)
	rs := gpuarray.NewRandomState(1)
	cols := []*gpuarray.Array{rs.Integers(0, int64(rows), gpuarray.Shape(rows), chunk)}
	for j := 0; j < 3; j++ {
		cols = append(cols, rs.Uniform(0, 1, gpuarray.Shape(rows), chunk))
	}
	for j := range cols {
		if cols[j] = cols[j].Persist(opts...); cols[j].Err() != nil {
			return fmt.Errorf("bench frame shuffle: %w", cols[j].Err())
		}
	}
	best := 0.0
	for run := 0; run < 2; run++ {
		start := time.Now()
		out, _, err := c.ShuffleColumns(ctx, cols, []int{0}, []int{-1}, parts)
		if err != nil {
			if rs := c.Restarts(); len(rs) > 0 {
				return fmt.Errorf("bench frame shuffle: %w (workers restarted: %v)", err, rs)
			}
			return fmt.Errorf("bench frame shuffle: %w", err)
		}
		if s := time.Since(start).Seconds(); run == 0 || s < best {
			best = s
		}
		for _, a := range out {
			a.Release()
		}
	}
	res := shuffleResult{Task: "shuffle", Rows: rows, Workers: workers, Partitions: parts, Seconds: best, PeakRSS: map[string]int64{},
		Bytes: int64(rows) * 32}
	for name, pid := range c.WorkerPIDs() {
		res.PeakRSS[name] = peakRSSMiB(pid)
	}
	if asJSON {
		b, _ := json.Marshal(res)
		fmt.Fprintln(w, string(b))
		return nil
	}
	fmt.Fprintf(w, "shuffle %d rows (int64 key, 3 float64) on %d workers into %d partitions: %.3f s; peak RSS MiB per worker %v\n",
		rows, workers, parts, best, res.PeakRSS)
	return nil
}

// peakRSSMiB reads a process's peak resident memory (VmHWM) in MiB, -1 when unknown.
func peakRSSMiB(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return -1
			}
			return kb >> 10
		}
	}
	return -1
}
