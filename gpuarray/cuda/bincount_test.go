package cuda

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/driver"
)

// TestGPUBincountMatchesHost: the bincount kernel, with block histograms in shared memory
// (few bins) and with atomics in device memory (many bins), counts random values as a loop
// on the host does, and flags values that are not integers in range.
func TestGPUBincountMatchesHost(t *testing.T) {
	d := gpu(t)
	rs := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		n     int
		nbins int
	}{{1, 1}, {1000, 7}, {3_000_001, 100}, {2_000_000, maxSharedBins}, {500_000, maxSharedBins + 1}, {100_000, 100_000}} {
		vals := make([]float64, tc.n)
		want := make([]int64, tc.nbins)
		for i := range vals {
			k := rs.IntN(tc.nbins)
			if rs.IntN(3) == 0 {
				k = rs.IntN(1 + tc.nbins/10) // crowd the first bins
			}
			vals[i] = float64(k)
			want[k]++
		}
		got, err := deviceBincount(d, vals, tc.nbins)
		if err != nil {
			t.Fatalf("%d values into %d bins: %v", tc.n, tc.nbins, err)
		}
		for k := range want {
			if got[k] != want[k] {
				t.Fatalf("%d values into %d bins: bin %d holds %d, want %d", tc.n, tc.nbins, k, got[k], want[k])
			}
		}
	}
	for _, bad := range []struct {
		v    float64
		want string
	}{{-1, "negative"}, {2.5, "not an integer"}, {9, "not below the length 9"}} {
		_, err := deviceBincount(d, []float64{1, 2, bad.v, 3}, 9)
		if err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("value %v: error %v, want one saying %q", bad.v, err, bad.want)
		}
	}
}

// deviceBincount uploads vals and counts them on d.
func deviceBincount(d *Device, vals []float64, nbins int) ([]int64, error) {
	var out []int64
	err := d.Do(context.Background(), func() error {
		p, err := d.pool.Alloc(uint64(len(vals) * 8))
		if err != nil {
			return err
		}
		defer d.pool.Free(p)
		if err := driver.MemcpyHtoD(p, unsafe.Pointer(&vals[0]), uint64(len(vals)*8)); err != nil {
			return err
		}
		out, err = d.bincount(p, int64(len(vals)), nbins)
		return err
	})
	return out, err
}

// TestBincountPTXVariants: the shared-memory variant declares its block histogram and adds it
// to device memory at the end; the other adds each value there.
func TestBincountPTXVariants(t *testing.T) {
	s := bincountPTX("8.0", "sm_80", true)
	g := bincountPTX("8.0", "sm_80", false)
	if !strings.Contains(s, ".shared .align 4 .b32 hist[") || !strings.Contains(s, "red.shared.add.u32") || !strings.Contains(s, "red.global.add.u64 [%rd11], %rd13") {
		t.Errorf("shared variant:\n%s", s)
	}
	if strings.Contains(g, ".shared") || !strings.Contains(g, "red.global.add.u64 [%rd11], 1") {
		t.Errorf("global variant:\n%s", g)
	}
}
