package cuda

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// seedSpec is the spec of the seed benchmark's kernel (as the ptx package's tests build it).
func seedSpec() *Spec {
	return &Spec{Rank: 2, Reduce: RSum, Nodes: []Node{
		{Kind: NRandom, Rand: expr.RandSpec{Dist: expr.Normal, P0: 10, P1: 1, Key: [2]uint32{42, 0}}},
		{Kind: NConst, Value: 1},
		{Kind: NBinary, Op: expr.OpAdd, Args: [3]int{0, 1}},
	}}
}

func TestTaskValidate(t *testing.T) {
	s := &Spec{Rank: 1, Reduce: RSum, Nodes: []Node{{Kind: NInput}}}
	tk := Task{Dims: []int64{4}, Maps: []Map{{Off: 1, Strides: []int64{1}}}, Inputs: [][]float64{make([]float64, 4)}}
	if err := tk.validate(s); err == nil || !strings.Contains(err.Error(), "reaches [1, 4]") {
		t.Fatalf("out-of-bounds map accepted: %v", err)
	}
	tk.Maps[0].Off = 0
	if err := tk.validate(s); err != nil {
		t.Fatal(err)
	}
}

func TestCombine(t *testing.T) {
	if PairwiseSum([]float64{1, 2, 3, 4, 5}) != 15 {
		t.Fatal("pairwise sum")
	}
	n, m, q := MergeWelford(0, 0, 0, 2, 1.5, 0.5) // {1, 2}
	n, m, q = MergeWelford(n, m, q, 2, 3.5, 0.5)  // {3, 4}
	if n != 4 || m != 2.5 || q != 5 {
		t.Fatalf("welford %v %v %v", n, m, q)
	}
	if !better(1, 5, 2, 1, false) || better(2, 0, 1, 5, false) || !better(1, 0, 1, 5, true) {
		t.Fatal("better")
	}
}

// TestNoDriver checks the error path on machines without an NVIDIA driver (CI).
func TestNoDriver(t *testing.T) {
	if _, err := os.Stat("/dev/nvidiactl"); err == nil {
		t.Skip("this machine has an NVIDIA device")
	}
	devs, err := Devices()
	if len(devs) != 0 {
		t.Fatalf("devices without a driver: %v", devs)
	}
	if err == nil {
		t.Skip("a driver library is installed but no GPU is present")
	}
	if !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "no NVIDIA driver found: libcuda.so.1") {
		t.Fatalf("error %v", err)
	}
	if _, err := Open(0); !errors.Is(err, ErrNoDriver) {
		t.Fatalf("Open: %v", err)
	}
	_, err = RunOn(context.Background(), nil, seedSpec(), nil, Options{})
	if err == nil {
		t.Fatal("RunOn with no devices succeeded")
	}
}

func TestSizeClass(t *testing.T) {
	for _, tc := range []struct{ n, want uint64 }{
		{0, 256}, {1, 256}, {256, 256}, {257, 512}, {1 << 20, 1 << 20},
		{1<<20 + 1, 1<<20 + 1<<17},          // just past 1 MiB: the next eighth of it
		{800_000_000, 12 << 26},             // an 800 MB chunk: 805306368, not 1 GiB
		{1 << 30, 1 << 30},                  // a power of two stays
		{12_800_000_000, 1<<33 + 4*(1<<30)}, // a 12.8 GB block: 12 GiB, not 16
	} {
		got := sizeClass(tc.n)
		if got != tc.want {
			t.Errorf("sizeClass(%d) = %d, want %d", tc.n, got, tc.want)
		}
		if got < tc.n || (tc.n > 1<<20 && float64(got) > 1.125*float64(tc.n)) {
			t.Errorf("sizeClass(%d) = %d: less than asked, or more than an eighth above it", tc.n, got)
		}
	}
}
