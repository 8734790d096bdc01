package dataframe

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// hostStringCodes computes what gpuarray.DeviceStrings.Encode computes, on the host: a code
// per heap string (equal strings, equal codes) and a string index of each code, so that the
// string-key groupby path runs without a GPU.
func hostStringCodes(_ *runCtx, h *strHeap, _ []gpuarray.ComputeOption) (*gpuarray.Array, []int64, string, error) {
	codes, dict := h.encode()
	first := make([]int64, dict.len())
	seen := make([]bool, dict.len())
	// Codes in reverse order of first appearance, so the path does not rely on the host's
	// order (the device's is its hash table's).
	rev := make([]int64, len(codes))
	for i, c := range codes {
		r := int64(dict.len()) - 1 - c
		rev[i] = r
		if !seen[r] {
			seen[r], first[r] = true, int64(i)
		}
	}
	return gpuarray.WrapValues(dtype.OfInt64(rev)), first, "host emulation of the string encoding", nil
}

// stringKeyFrame is a random frame of string keys (one of a few values, a nullable one with
// multi-byte and empty strings, one of about a value per row), a categorical, a nullable
// integer and a bool key, and groupFrame's value columns (allDenseAggs), in parts partitions.
func stringKeyFrame(n, parts int, seed uint64) *Frame {
	r := rand.New(rand.NewPCG(seed, 31))
	cats, vs, sn, sw := make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	snValid, kiValid, viValid, vfValid := make([]bool, n), make([]bool, n), make([]bool, n), make([]bool, n)
	ki, vi := make([]int64, n), make([]int64, n)
	kb := make([]bool, n)
	vf := make([]float64, n)
	for i := range n {
		cats[i] = fmt.Sprintf("c%d", r.IntN(9))
		vs[i] = fmt.Sprintf("s%d", r.IntN(5))
		sn[i] = []string{"", "a", "ab", "日本", "abc"}[r.IntN(5)]
		snValid[i] = r.IntN(9) != 0
		sw[i] = fmt.Sprintf("w%d", r.IntN(n))
		ki[i] = int64(r.IntN(41)) - 20
		kiValid[i] = r.IntN(20) != 0
		kb[i] = r.IntN(2) == 0
		vi[i] = r.Int64N(2e12) - 1e12
		viValid[i] = r.IntN(10) != 0
		vf[i] = r.NormFloat64()*100 + 300
		vfValid[i] = r.IntN(8) != 0
	}
	return FromSlices(
		[]string{"cat", "vs", "sn", "sw", "ki", "kb", "vi", "vf"},
		[]any{cats, vs, Nullable(sn, snValid), sw, Nullable(ki, kiValid), kb, Nullable(vi, viValid), Nullable(vf, vfValid)},
		NPartitions(parts)).Assign("kc", Col("cat").ToCategory()).
		Assign("kt", Col("ki").Add(1_700_000_000).AsType(DatetimeS))
}

// TestGroupByStringKeysDevicePath runs GroupBy on string keys through the device path
// (string codes from a host emulation of the device encoding, the dense-code tables from a
// host emulation of the kernels) and compares it with the host's hash aggregation: string,
// nullable string, many-valued string and mixed keys, over several partitionings and a
// filter; Path names the encoding and the dense-code aggregation.
func TestGroupByStringKeysDevicePath(t *testing.T) {
	keySets := [][]string{{"vs"}, {"cat"}, {"sn"}, {"sw"}, {"vs", "ki"}, {"sn", "kb", "kc"}}
	for _, parts := range []int{1, 3} {
		f := stringKeyFrame(2000, parts, uint64(parts))
		for _, fl := range []bool{false, true} {
			src := f
			if fl {
				src = f.Filter(Col("vf").Gt(280))
			}
			for _, keys := range keySets {
				what := fmt.Sprintf("%d parts, filter %v, keys %v", parts, fl, keys)
				g := src.GroupBy(keys...).Sorted().Agg(allDenseAggs()...)
				want, err := g.Compute()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				restore := emulateDevice(t)
				codes := deviceStringCodes
				deviceStringCodes = hostStringCodes
				got, err := g.Compute()
				deviceStringCodes = codes
				restore()
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				p := got.Path()
				if !strings.Contains(p, "host emulation of the string encoding") || !strings.Contains(p, "dense-code aggregation on the GPU") || strings.Contains(p, "aggregation on the host") {
					t.Fatalf("%s: Path %q", what, p)
				}
				sameFrames(t, what, got, want, 1e-9)
			}
		}
	}
}
