package ptx

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/base64"
	"encoding/gob"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/kernels"
)

// TestKernelsUnchanged regenerates every fused kernel spec that the cuda and gpuarray tests
// generated when the generator lived in package cuda, and checks that each kernel's name and
// PTX are the same bytes: moving the generator changed no kernel. testdata/kernels.jsonl.gz
// holds the 948 distinct specs (gob in base64) that reached the generator's entry at 8d35196
// while `go test ./gpuarray/cuda ./gpuarray` ran (gpuarray's run whole, cuda's until its
// 10-minute timeout on the loaded machine), each with the SHA-256 of its name and PTX, or of its
// error, against the sm90 and generic device libraries under the default switches. A change
// that alters kernels on purpose regenerates the file.
func TestKernelsUnchanged(t *testing.T) {
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "GPUNOTES_PTX_") {
			t.Skipf("%s set: the recorded kernels are those of the default switches", kv)
		}
	}
	f, err := os.Open("testdata/kernels.jsonl.gz")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	// GeneratePTX is Validate, ParseLibrary and Generate; the library is parsed once here.
	libs := map[string]*Library{}
	for _, fl := range []string{kernels.SM90, kernels.Generic} {
		text, err := kernels.LibPTX(fl)
		if err != nil {
			t.Fatal(err)
		}
		if libs[fl], err = ParseLibrary(string(text)); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	n, failed := 0, 0
	for sc.Scan() {
		var rec map[string]json.RawMessage
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatal(err)
		}
		var enc string
		if err := json.Unmarshal(rec["spec"], &enc); err != nil {
			t.Fatal(err)
		}
		raw, err := base64.StdEncoding.DecodeString(enc)
		if err != nil {
			t.Fatal(err)
		}
		var s Spec
		if err := gob.NewDecoder(bytes.NewReader(raw)).Decode(&s); err != nil {
			t.Fatalf("record %d: %v", n, err)
		}
		for fl, lib := range libs {
			var want string
			if err := json.Unmarshal(rec[fl], &want); err != nil {
				t.Fatalf("record %d: %s: %v", n, fl, err)
			}
			err := s.Validate()
			var ptx, name string
			if err == nil {
				ptx, name, err = Generate(&s, lib)
			}
			text := name + "\n" + ptx
			if err != nil {
				text = "error: " + err.Error()
			}
			h := sha256.Sum256([]byte(text))
			if got := hex.EncodeToString(h[:]); got != want && failed < 10 {
				failed++
				t.Errorf("record %d, spec %s (%s): generated %s, recorded %s", n, s.Key(), fl, got, want)
			}
		}
		n++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 900 {
		t.Fatalf("%d recorded specs, want the 948 the tests generated", n)
	}
	t.Logf("%d specs, %d flavours each: the same PTX", n, len(libs))
}

// TestOpKernelsUnchanged regenerates the op-specific kernels (scans of every dtype, op and
// walk; weighted bincounts; the device combines of sums and Welford triples over several
// task layouts) and checks them against the SHA-256 of their names and PTX recorded at
// 8d35196 (testdata/opkernels.txt), before the generator left package cuda.
func TestOpKernelsUnchanged(t *testing.T) {
	b, err := os.ReadFile("testdata/opkernels.txt")
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		i := strings.LastIndexByte(l, ' ')
		want[l[:i]] = l[i+1:]
	}
	got := map[string]string{}
	add := func(what, text string) {
		h := sha256.Sum256([]byte(text))
		got[what] = hex.EncodeToString(h[:])
	}
	for _, dt := range dtype.All {
		for _, op := range []expr.Op{expr.OpAdd, expr.OpMul} {
			for _, seg := range []bool{false, true} {
				ptx, name, err := ScanPTX("8.0", "sm_90", dt, op, seg)
				if err != nil {
					ptx = "error: " + err.Error()
				}
				add(fmt.Sprintf("scan %d %d %v", dt, op, seg), name+"\n"+ptx)
			}
		}
	}
	for _, bins := range []int{1, 2, 7, 100, 1000, 8192} {
		add(fmt.Sprintf("weighted %d", bins), WeightedName(bins)+"\n"+WeightedPTX("8.0", "sm_90", bins))
	}
	for _, sl := range [][]int64{{1}, {3}, {2, 5}, {1, 1, 4}, {7, 3, 2, 9}} {
		for _, f32 := range []bool{false, true} {
			for _, div := range []float64{1, 3, 0.5} {
				n := CombineName(sl, div, f32)
				add(fmt.Sprintf("combine %v %v %v", sl, div, f32), n+"\n"+CombinePTX("8.0", "sm_90", n, sl, div, f32))
			}
			for _, std := range []bool{false, true} {
				n := WelfordCombineName(sl, std, f32)
				add(fmt.Sprintf("welford %v %v %v", sl, std, f32), n+"\n"+WelfordCombinePTX("8.0", "sm_90", n, sl, std, f32))
			}
		}
	}
	if len(got) != len(want) {
		t.Errorf("%d kernels generated, %d recorded", len(got), len(want))
	}
	for k, h := range got {
		if want[k] != h {
			t.Errorf("%s: generated %s, recorded %q", k, h, want[k])
		}
	}
}
