package cluster_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/cluster"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// shuffleInput persists a key column and three float columns of rows rows, in parts
// partitions, on c: computed there from the graph, so a killed worker's chunks come back.
func shuffleInput(t *testing.T, c *cluster.LocalCUDA, rows, parts int) []*gpuarray.Array {
	t.Helper()
	chunk := gpuarray.Chunks((rows + parts - 1) / parts)
	rs := gpuarray.NewRandomState(7)
	cols := []*gpuarray.Array{rs.Integers(0, int64(rows/4), gpuarray.Shape(rows), chunk)}
	for j := 0; j < 3; j++ {
		cols = append(cols, rs.Normal(0, 1, gpuarray.Shape(rows), chunk))
	}
	for j, a := range cols {
		cols[j] = a.Persist(gpuarray.On(c))
		if err := cols[j].Err(); err != nil {
			t.Fatal(err)
		}
	}
	return cols
}

type shuffled struct {
	parts []int
	cols  [][]float64
	lens  []int
}

func runShuffle(t *testing.T, ctx context.Context, c *cluster.LocalCUDA, cols []*gpuarray.Array, n int) (*shuffled, error) {
	out, parts, err := c.ShuffleColumns(ctx, cols, []int{0}, []int{-1}, n)
	if err != nil {
		return nil, err
	}
	s := &shuffled{parts: parts, lens: out[0].Chunks()[0]}
	for _, a := range out {
		v, err := a.ToSlice(gpuarray.On(c))
		if err != nil {
			return nil, err
		}
		s.cols = append(s.cols, v)
		a.Release()
	}
	return s, nil
}

// checkPartitioned checks that every key is in one output partition and that the rows are the
// input's, as a multiset.
func checkPartitioned(t *testing.T, c *cluster.LocalCUDA, in []*gpuarray.Array, s *shuffled) {
	t.Helper()
	where := map[float64]int{}
	off := 0
	for q, l := range s.lens {
		for _, k := range s.cols[0][off : off+l] {
			if p, ok := where[k]; ok && p != q {
				t.Fatalf("key %v in output partitions %d and %d", k, p, q)
			}
			where[k] = q
		}
		off += l
	}
	row := func(cols [][]float64, i int) string {
		var b strings.Builder
		for _, c := range cols {
			b.WriteString(strconv.FormatFloat(c[i], 'g', -1, 64) + " ")
		}
		return b.String()
	}
	var inCols [][]float64
	for _, a := range in {
		v, err := a.ToSlice(gpuarray.On(c))
		if err != nil {
			t.Fatal(err)
		}
		inCols = append(inCols, v)
	}
	var a, b []string
	for i := range inCols[0] {
		a = append(a, row(inCols, i))
	}
	for i := range s.cols[0] {
		b = append(b, row(s.cols, i))
	}
	slices.Sort(a)
	slices.Sort(b)
	if !slices.Equal(a, b) {
		t.Fatalf("the shuffle's %d rows are not the input's %d rows", len(b), len(a))
	}
}

func sameShuffle(a, b *shuffled) bool {
	if !slices.Equal(a.parts, b.parts) || !slices.Equal(a.lens, b.lens) {
		return false
	}
	for j := range a.cols {
		if !bitEqual(a.cols[j], b.cols[j]) {
			return false
		}
	}
	return true
}

// spillDirsEmpty fails when a worker left anything under dir.
func spillDirsEmpty(t *testing.T, dir string) {
	t.Helper()
	var left []string
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && p != dir {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Fatalf("left in the workers' spill directory after close: %v", left)
	}
}

// TestShuffleSurvivesKilledWorker shuffles persisted columns between four workers worker to
// worker, kills one of them with SIGKILL while a second shuffle of the same columns runs, and
// checks that it completes with the result of the first, and that no spilled file is left once
// the cluster closes.
func TestShuffleSurvivesKilledWorker(t *testing.T) {
	dir := t.TempDir()
	c := newCluster(t, cluster.Options{NWorkers: 4, LocalDirectory: dir, MemoryLimit: "96MiB"})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cols := shuffleInput(t, c, 1_200_000, 16)
	want, err := runShuffle(t, ctx, c, cols, 12)
	if err != nil {
		t.Fatal(err)
	}
	checkPartitioned(t, c, cols, want)
	moved := int64(0)
	for _, w := range c.WorkerInfo() {
		moved += w.ShuffleSent
	}
	t.Logf("first shuffle: %d bytes moved worker to worker", moved)

	got, err := killDuring(t, ctx, c, "cpu2", func(returned func()) (*shuffled, error) {
		out, parts, err := c.ShuffleColumns(ctx, cols, []int{0}, []int{-1}, 12)
		returned()
		if err != nil {
			return nil, err
		}
		s := &shuffled{parts: parts, lens: out[0].Chunks()[0]}
		for _, a := range out {
			v, err := a.ToSlice(gpuarray.On(c))
			if err != nil {
				return nil, err
			}
			s.cols = append(s.cols, v)
			a.Release()
		}
		return s, nil
	})
	if err != nil {
		t.Fatalf("shuffle with a worker killed: %v", err)
	}
	if !sameShuffle(got, want) {
		t.Fatal("the shuffle with a worker killed differs from the one without")
	}
	for _, a := range cols {
		a.Release()
	}
	c.Close()
	spillDirsEmpty(t, dir)
}

// killDuring calls run in a goroutine and kills worker victim of c with SIGKILL once the
// scheduler has sent tasks out (its own state, not the workers' periodic reports). run calls
// returned when the work under test has returned (before reading its result back): a kill
// that came later may lose the result with the worker, so killDuring waits for the worker to
// come back and tries again, five times at most. It returns run's result under the kill and
// checks that the worker was killed.
func killDuring[R any](t *testing.T, ctx context.Context, c *cluster.LocalCUDA, victim string, run func(returned func()) (R, error)) (R, error) {
	t.Helper()
	type result struct {
		v   R
		err error
	}
	n := len(c.WorkerInfo())
	for try := 0; ; try++ {
		if try == 5 {
			t.Fatal("five kills all came after the work had returned")
		}
		returned := make(chan struct{})
		done := make(chan result, 1)
		go func() {
			v, err := run(func() { close(returned) })
			done <- result{v, err}
		}()
		pid := c.WorkerPIDs()[victim]
		for busy := false; !busy; {
			for _, w := range c.WorkerInfo() {
				busy = busy || w.Processing > 0
			}
			select {
			case <-returned:
				busy = true
			case <-ctx.Done():
				t.Fatal(ctx.Err())
			case <-time.After(5 * time.Millisecond):
			}
		}
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		select {
		case <-returned:
			<-done
			if err := c.WaitForWorkers(n, time.Minute); err != nil {
				t.Fatal(err)
			}
			continue
		default:
		}
		got := <-done
		if rs := c.Restarts(); !strings.Contains(fmt.Sprint(rs), "killed") {
			t.Fatalf("restarts %v: the worker was not killed", rs)
		}
		return got.v, got.err
	}
}

// TestShuffleLargerThanMemory shuffles more data than two workers' memory limits hold: it
// completes with every row, the shards spill to disk, no worker's own accounting (kept
// results and shuffle buffers in flight, at their peak) exceeds its limit, nor its peak
// resident memory (VmHWM, logged) its limit and a margin, and no spilled file is left after
// close.
func TestShuffleLargerThanMemory(t *testing.T) {
	dir := t.TempDir()
	const limit = 256 << 20
	c := newCluster(t, cluster.Options{NWorkers: 2, LocalDirectory: dir, MemoryLimit: strconv.Itoa(limit)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// 4 columns × 18e6 rows × 8 bytes = 576 MB, past the 512 MiB the two workers hold.
	rows := 18_000_000
	cols := shuffleInput(t, c, rows, 64)
	out := shuffleAllRows(t, ctx, c, cols, rows, 64)
	var spilled uint64
	held := map[string]uint64{}
	for _, w := range c.WorkerInfo() {
		spilled += w.Spilled
		held[w.Name] = w.HeldPeak
	}
	peaks := map[string]uint64{}
	for name, pid := range c.WorkerPIDs() {
		peaks[name] = peakRSS(t, pid) >> 20
	}
	t.Logf("per worker (limit %d MiB): peak held by its accounting (MiB) %v, peak resident (MiB) %v", limit>>20, mib(held), peaks)
	if spilled == 0 {
		t.Error("nothing spilled to disk")
	}
	residentUnderLimit(t, peaks, limit)
	for name, h := range held {
		if h == 0 || h > limit {
			t.Errorf("worker %s held %d bytes at its peak, its limit is %d", name, h, limit)
		}
	}
	for _, a := range append(out, cols...) {
		a.Release()
	}
	c.Close()
	spillDirsEmpty(t, dir)
}

func mib(m map[string]uint64) map[string]uint64 {
	out := map[string]uint64{}
	for k, v := range m {
		out[k] = v >> 20
	}
	return out
}

// residentUnderLimit fails the test for a worker whose peak resident memory (MiB, VmHWM:
// the whole process, its binary's pages too) passed its limit by more than an eighth. The
// margin is memory, not time: the worker fits the Go runtime's limit and its store's to the
// limit net of its resident binary, measured once a second, so what the binary pages in
// between measures, and the collector's lag behind allocations, may pass it a little.
func residentUnderLimit(t *testing.T, peaks map[string]uint64, limit uint64) {
	t.Helper()
	for name, p := range peaks {
		if p<<20 > limit+limit/8 {
			t.Errorf("worker %s: peak resident memory %d MiB, past its %d MiB limit and an eighth", name, p, limit>>20)
		}
	}
}

// peakRSS reads a process's peak resident memory (VmHWM).
func peakRSS(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "VmHWM:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatalf("no VmHWM for process %d", pid)
	return 0
}

// TestShuffleReceivesStayUnderTheLimit shuffles four workers' partitions into two output
// partitions, so that two workers receive from all four at once, each more than its memory
// limit in all: the receive buffers count in the workers' accounting from their first byte
// (they wait for room or spill kept shards before they are allocated), so no worker's peak
// (kept results and buffers in flight) passes its limit, nor its peak resident memory
// (VmHWM) its limit and a margin, the rows all arrive and the shards spill.
func TestShuffleReceivesStayUnderTheLimit(t *testing.T) {
	dir := t.TempDir()
	const limit = 96 << 20
	c := newCluster(t, cluster.Options{NWorkers: 4, LocalDirectory: dir, MemoryLimit: strconv.Itoa(limit)})
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// 4 columns × 8e6 rows × 8 bytes = 256 MB, half of it to each of two workers.
	rows := 8_000_000
	cols := shuffleInput(t, c, rows, 32)
	out := shuffleAllRows(t, ctx, c, cols, rows, 2)
	var spilled uint64
	held := map[string]uint64{}
	recv := map[string]int64{}
	for _, w := range c.WorkerInfo() {
		spilled += w.Spilled
		held[w.Name], recv[w.Name] = w.HeldPeak, w.ShuffleReceived
	}
	peaks := map[string]uint64{}
	for name, pid := range c.WorkerPIDs() {
		peaks[name] = peakRSS(t, pid) >> 20
	}
	t.Logf("per worker (limit %d MiB): received %v bytes, peak held by its accounting (MiB) %v, peak resident (MiB) %v", limit>>20, recv, mib(held), peaks)
	if spilled == 0 {
		t.Error("nothing spilled to disk")
	}
	residentUnderLimit(t, peaks, limit)
	receivers := 0
	for name, r := range recv {
		if r > limit {
			receivers++
		}
		if h := held[name]; h == 0 || h > limit {
			t.Errorf("worker %s held %d bytes at its peak, its limit is %d", name, h, limit)
		}
	}
	if receivers != 2 {
		t.Errorf("%d workers received more than their limit, want the two owners of the output: %v", receivers, recv)
	}
	for _, a := range append(out, cols...) {
		a.Release()
	}
	c.Close()
	spillDirsEmpty(t, dir)
}
