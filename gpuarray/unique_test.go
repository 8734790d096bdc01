package gpuarray

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// uniqueCases returns random cases of UniqueValues, UniqueCounts, UniqueInverse and UniqueAll against NumPy's: random
// shapes and chunks, many ties, NaNs (distinct from each other, as the Array API has them),
// and integers. Signed zeros are left out: which of -0 and +0 NumPy keeps depends on its
// unstable sort.
func uniqueCases(seed uint64, n int) []check {
	rs := rand.New(rand.NewPCG(seed, 17))
	var cs []check
	for i := 0; i < n; i++ {
		shape := npShape(rs, rs.IntN(4), 1, 7)
		_, in := randArray(rs, "x", shape)
		for j := range in.data {
			switch rs.IntN(6) {
			case 0:
				in.data[j] = math.NaN()
			case 1, 2:
				in.data[j] = float64(rs.IntN(5))
			}
			if in.data[j] == 0 {
				in.data[j] = 0 // no -0
			}
		}
		x := FromSlice(in.data, Shape(shape...), ChunkSizes(npChunks(rs, shape)...))
		what := fmt.Sprintf("(shape %v, chunks %v)", shape, x.Chunks())
		v, c := UniqueCounts(x)
		clean := make([]float64, len(in.data))
		for j, f := range in.data {
			if f == f {
				clean[j] = math.Trunc(f)
			}
		}
		xi := FromSlice(clean, Shape(shape...), ChunkSizes(x.Chunks()...)).AsType(Int64)
		vi, ci := UniqueCounts(xi)
		av, ai, ainv, ac := UniqueAll(x)
		iv, iinv := UniqueInverse(xi)
		cs = append(cs,
			check{what: "UniqueAll" + what, list: []*Array{av, ai, ainv, ac}, code: "list(np.unique_all(x))", inputs: []input{in}},
			check{what: "UniqueInverse int64" + what, list: []*Array{iv, iinv}, code: "list(np.unique_inverse(np.nan_to_num(x).astype(np.int64)))", inputs: []input{in}},
			check{what: "UniqueValues" + what, got: UniqueValues(x), code: "np.unique_values(x)", inputs: []input{in}},
			check{what: "UniqueCounts" + what, list: []*Array{v, c}, code: "list(np.unique_counts(x))", inputs: []input{in}},
			check{what: "UniqueCounts int64" + what, list: []*Array{vi, ci}, code: "list(np.unique_counts(np.nan_to_num(x).astype(np.int64)))", inputs: []input{in}},
		)
	}
	return cs
}

func TestUniqueMatchesNumPy(t *testing.T) {
	runChecks(t, uniqueCases(1, 30))
}

// TestGPUUniqueMatchesNumPy runs the set functions with a GPU scheduler.
func TestGPUUniqueMatchesNumPy(t *testing.T) {
	needGPU(t)
	runChecks(t, uniqueCases(2, 8), OnGPU())
}

// TestGPUSetsRunOnTheDevice: on a GPU the set functions and Nonzero sort, scan and gather on
// the device (Path names the device sort, the mask positions listed on the host, or for
// Nonzero selected on the device, and no host fallback or host gather), and equal the CPU's bit for bit, for int32 and float64 values.
func TestGPUSetsRunOnTheDevice(t *testing.T) {
	needGPU(t)
	compactMasks(t)
	rs := NewRandomState(6)
	for _, x := range []*Array{
		rs.Integers(-50, 50, Shape(300, 70), Chunks(128, 70), WithDType(Int32)),
		rs.StandardNormal(Shape(300, 70), Chunks(100, 35)).Round(),
	} {
		v, i, inv, c := UniqueAll(x)
		nz := Nonzero(x)
		for name, a := range map[string]*Array{"values": v, "indices": i, "inverse": inv, "counts": c, "nonzero rows": nz[0], "nonzero columns": nz[1]} {
			g, err := a.Compute(OnGPU())
			if err != nil {
				t.Fatalf("%v %s: %v", x.DType(), name, err)
			}
			p := g.Path()
			// The inverse scatters the sorted order back (a scan and an argsort): no mask.
			// Nonzero's mask is compacted on the device; the others mark the sorted values'
			// run boundaries there and compact them with a device scan.
			selected := "selected on the device"
			if strings.Contains(p, "host fallback") || strings.Contains(p, "host gather") || name != "inverse" && !strings.Contains(p, selected) {
				t.Errorf("%v %s: Path %q", x.DType(), name, p)
			}
			if name != "nonzero rows" && name != "nonzero columns" && !strings.Contains(p, "on the device radix sort") {
				t.Errorf("%v %s: Path %q names no device sort", x.DType(), name, p)
			}
			got, err := g.ToSlice()
			if err != nil {
				t.Fatal(err)
			}
			want, err := a.ToSlice(Inline())
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%v %s: GPU %v, CPU %v", x.DType(), name, got, want)
			}
		}
	}
}
