package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// TestBenchOpsCPU runs the whole op table on the CPU backend: one JSON line per op with the
// contract's fields, values that match the same ops computed directly, and arange's exact sum.
func TestBenchOpsCPU(t *testing.T) {
	const n, chunk = 64, 24
	var out bytes.Buffer
	if err := benchOps(context.Background(), []string{"--backend", "cpu", "--n", "64", "--chunk", "24", "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	seen := map[string]opsResult{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var raw map[string]any
		if err := json.Unmarshal(sc.Bytes(), &raw); err != nil {
			t.Fatalf("not JSON: %q: %v", sc.Text(), err)
		}
		for _, k := range []string{"op", "n", "chunk", "backend", "device", "seconds", "path"} {
			if _, ok := raw[k]; !ok {
				t.Errorf("line %q lacks %q", sc.Text(), k)
			}
		}
		var r opsResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatal(err)
		}
		if r.N != n || r.Chunk != chunk || r.Backend != "cpu" || !(r.Seconds > 0) || math.IsInf(r.Seconds, 0) || !(r.ToHostSeconds >= r.Seconds) || math.IsInf(r.ToHostSeconds, 0) {
			t.Errorf("line %+v", r)
		}
		seen[r.Op] = r
	}
	if len(seen) != len(opsTable) {
		t.Fatalf("%d ops printed, the table has %d", len(seen), len(opsTable))
	}
	if got, want := seen["sum(arange(n*n))"].Value, float64(n*n)*float64(n*n-1)/2; got != want {
		t.Errorf("arange sum %v, want %v", got, want)
	}
	x := gpuarray.NewRandomState(42).StandardNormal(gpuarray.Shape(n, n), gpuarray.Chunks(chunk, chunk))
	kernel := gpuarray.Where(x.Gt(0), x.Mul(x), x.Exp()).Add(1).Sum()
	for op, y := range map[string]*gpuarray.Array{"sum(Elementwise: where(x > 0, x * x, exp(x)) + 1)": kernel, "sum(axis=0)": x.Sum(0), "std(axis=1)": x.Std(1), "argmax": x.ArgMax(), "max": x.Max(), "sum(int32)": x.Mul(1000).AsType(gpuarray.Int32).Sum(), "sum(bool)": x.Gt(0).Sum()} {
		v, err := y.ToSlice(gpuarray.Inline())
		if err != nil {
			t.Fatal(err)
		}
		if got := seen[op].Value; math.Abs(got-v[0]) > 1e-12*(1+math.Abs(v[0])) {
			t.Errorf("%s: bench value %v, computed %v", op, got, v[0])
		}
	}
}

func TestBenchOpsUsage(t *testing.T) {
	for _, args := range [][]string{{"--backend", "tpu"}, {"--op", "nope"}, {"--n", "0"}, {"extra"}, {"--backend", "cpu", "--gpus", "2"}, {"--backend", "gpu", "--gpus", "0"}, {"--match", "("}, {"--match", "^no such op$"}} {
		if err := benchOps(context.Background(), args, &bytes.Buffer{}); !errors.Is(err, errUsage) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}

// TestBenchOpsMatch: --match runs exactly the ops whose names match.
func TestBenchOpsMatch(t *testing.T) {
	var out bytes.Buffer
	if err := benchOps(context.Background(), []string{"--n", "200", "--chunk", "100", "--match", `^(mean|std\(axis=1\))$`, "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	var ops []string
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var r opsResult
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("%q: %v", line, err)
		}
		ops = append(ops, r.Op)
	}
	if fmt.Sprint(ops) != "[mean std(axis=1)]" {
		t.Fatalf("ran %v, want [mean std(axis=1)]", ops)
	}
}

// TestBenchOpsCalls runs the call rows (--persisted: --persist --calls) on the CPU backend:
// every row of callsTable once, on its own input (the vector, the matrices), each value the
// first element of the same op computed directly, and the rows of the op table with them.
func TestBenchOpsCalls(t *testing.T) {
	var out bytes.Buffer
	if err := benchOps(context.Background(), []string{"--backend", "cpu", "--n", "48", "--chunk", "16", "--vn", "1000", "--vchunk", "300", "--mn", "40", "--sn", "24", "--persisted", "--json"}, &out); err != nil {
		t.Fatal(err)
	}
	seen := map[string]opsResult{}
	sc := bufio.NewScanner(&out)
	for sc.Scan() {
		var r opsResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("not JSON: %q: %v", sc.Text(), err)
		}
		if !r.Persisted {
			t.Errorf("%s: not marked persisted", r.Op)
		}
		seen[r.Op] = r
	}
	if len(seen) != len(opsTable)+len(callsTable) {
		t.Fatalf("%d ops printed, the tables have %d", len(seen), len(opsTable)+len(callsTable))
	}
	sizes := benchSizes{n: 48, chunk: 16, vn: 1000, vchunk: 300, mn: 40, sn: 24}
	for _, op := range callsTable {
		v, err := op.build(benchArray(op.of(), sizes), 48, 16).ToSlice(gpuarray.Inline())
		if err != nil {
			t.Fatalf("%s: %v", op.name, err)
		}
		r, ok := seen[op.name]
		if !ok {
			t.Fatalf("%s: no row", op.name)
		}
		if math.Abs(r.Value-v[0]) > 1e-12*(1+math.Abs(v[0])) {
			t.Errorf("%s: bench value %v, computed %v", op.name, r.Value, v[0])
		}
	}
}
