package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/internal/testenv"
)

// peerLine is one JSON line of a CuPy peer (bench/peer.py's emit).
type peerLine struct {
	Peer    string   `json:"peer"`
	Op      string   `json:"op"`
	N       int      `json:"n"`
	M       *int     `json:"m"`
	Device  string   `json:"device"`
	Seconds float64  `json:"seconds"`
	Value   *float64 `json:"value"`
}

// runPeerDry runs a CuPy peer in bench/ with --dry (NumPy, no GPU) and returns its lines.
func runPeerDry(t *testing.T, script string, args ...string) []peerLine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, testenv.Python(t), append([]string{"bench/" + script, "--dry"}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\n%s", script, err, stderr.String())
	}
	var lines []peerLine
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var l peerLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("%s: not JSON: %q: %v", script, sc.Text(), err)
		}
		if l.Device != "none (dry run on NumPy)" || !(l.Seconds > 0) || math.IsInf(l.Seconds, 0) || l.Value == nil || math.IsNaN(*l.Value) || math.IsInf(*l.Value, 0) {
			t.Errorf("%s: line %q", script, sc.Text())
		}
		lines = append(lines, l)
	}
	return lines
}

// peerRows are a peer's lines as "peer op" strings, in order.
func peerRows(lines []peerLine) []string {
	var rows []string
	for _, l := range lines {
		rows = append(rows, l.Peer+" "+l.Op)
	}
	return rows
}

// TestCuPyPeersDryRun runs the CuPy peers that share bench/peer.py on NumPy (they run for real
// only on the GPU machine): every row and variant is printed with its sizes, the device, a time
// and a value in the op's range, and a size of 0 leaves its row out.
func TestCuPyPeersDryRun(t *testing.T) {
	const n, m = 1000, 64
	search := runPeerDry(t, "cupy_search.py", "--n", "1000", "--m", "64")
	if got, want := peerRows(search), []string{"cupy-regen searchsorted", "cupy-resident searchsorted", "cupy-regen sort int64", "cupy-resident sort int64"}; !slices.Equal(got, want) {
		t.Errorf("cupy_search.py rows %q, want %q", got, want)
	}
	for _, l := range search {
		if l.N != n || l.M == nil || *l.M != m {
			t.Errorf("cupy_search.py %s %s: n %d, m %v", l.Peer, l.Op, l.N, l.M)
		}
		v := *l.Value
		if l.Op == "searchsorted" && (v < 0 || v > m || v != math.Trunc(v)) {
			t.Errorf("cupy_search.py %s: position %v, not one of 0..%d", l.Peer, v, m)
		}
		if l.Op == "sort int64" && (v < -(1<<40) || v >= 1<<40) {
			t.Errorf("cupy_search.py %s: value %v outside [-2^40, 2^40)", l.Peer, v)
		}
	}
	sort := runPeerDry(t, "cupy_sort.py", "--n", "1000", "--m", "64")
	if got, want := peerRows(sort), []string{"cupy-regen sort", "cupy-resident sort", "cupy-device sort", "cupy-regen median(axis=0)", "cupy-resident median(axis=0)", "cupy-device median(axis=0)"}; !slices.Equal(got, want) {
		t.Errorf("cupy_sort.py rows %q, want %q", got, want)
	}
	for _, l := range sort {
		if want := map[string]int{"sort": n, "median(axis=0)": m}[l.Op]; l.N != want || l.M != nil {
			t.Errorf("cupy_sort.py %s %s: n %d (want %d), m %v", l.Peer, l.Op, l.N, want, l.M)
		}
	}
	if got, want := peerRows(runPeerDry(t, "cupy_sort.py", "--n", "1000", "--m", "0")), []string{"cupy-regen sort", "cupy-resident sort", "cupy-device sort"}; !slices.Equal(got, want) {
		t.Errorf("cupy_sort.py --m 0: rows %q, want %q", got, want)
	}
}
