package cuda

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// TestBoundsPTX runs the run-boundary kernels in the PTX interpreter over sorted arrays with
// repeats, in every class the GPU keeps them in: the marks are the host's, byte for byte (the
// first element and each one unlike the one before it; the last and each one unlike the one
// after it), with each NaN a run of its own and -0 one run with +0, as Go's and NumPy's !=.
func TestBoundsPTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(5, 32))
	const srcAt, outAt = 1 << 20, 1 << 28
	for _, cls := range ptx.BoundsClasses {
		for _, n := range []int{1, 2, 7, 300, 1031} {
			size := map[string]int{"f64": 8, "u64": 8, "f32": 4, "u8": 1, "u16": 2, "u32": 4}[cls]
			// Sorted values with repeats; floats end with NaNs and hold -0 beside +0.
			fs := make([]float64, n)
			for i := range fs {
				fs[i] = float64(rs.IntN(max(n/3, 2)) - n/6)
			}
			slices.Sort(fs)
			if cls == "f64" || cls == "f32" {
				for i := range fs {
					if fs[i] == 0 && rs.IntN(2) == 0 {
						fs[i] = math.Copysign(0, -1)
					}
				}
				for i := n - min(n/4, 3); i < n && n > 3; i++ {
					fs[i] = math.NaN()
				}
			}
			data := make([]byte, n*size)
			for i, v := range fs {
				var bits uint64
				switch cls {
				case "f64":
					bits = math.Float64bits(v)
				case "f32":
					bits = uint64(math.Float32bits(float32(v)))
				default:
					bits = uint64(int64(v)) // two's complement, cut to the element's size
				}
				for j := range size {
					data[i*size+j] = byte(bits >> (8 * j))
				}
			}
			for _, last := range []bool{false, true} {
				mem := map[uint64]uint64{}
				for i := 0; i < len(data); i += 8 {
					var w uint64
					for j := 0; j < 8 && i+j < len(data); j++ {
						w |= uint64(data[i+j]) << (8 * j)
					}
					mem[srcAt+uint64(i)] = w
				}
				text, _, err := ptx.BoundsPTX("8.0", "sm_90", cls, last)
				if err != nil {
					t.Fatal(err)
				}
				p := ptxtest.Parse(t, text)
				for b := range (n + BlockSize - 1) / BlockSize {
					ptxtest.Run(t, p, b, 0, map[string]uint64{"src": srcAt, "n": uint64(n), "out": outAt}, mem, nil)
				}
				for i := range n {
					var want byte
					switch {
					case !last && (i == 0 || fs[i] != fs[i-1]), last && (i == n-1 || fs[i] != fs[i+1]):
						want = 1
					}
					at := uint64(outAt + i)
					if got := byte(mem[at&^7] >> (8 * (at & 7))); got != want {
						t.Fatalf("%s, n %d, last %v: mark %d of %v is %d, want %d", cls, n, last, i, fs[max(i-1, 0):min(i+2, n)], got, want)
					}
				}
			}
		}
	}
	if _, _, err := ptx.BoundsPTX("8.0", "sm_90", "c128", false); err == nil {
		t.Error("boundaries of complex words did not fail")
	}
	for _, c := range []struct {
		dt     dtype.DType
		narrow bool
		want   string
	}{
		{dtype.Float64, false, "f64"}, {dtype.Int64, false, "u64"}, {dtype.Float32, true, "f32"}, {dtype.Float32, false, "f64"},
		{dtype.Int32, true, "u32"}, {dtype.Int16, true, "u16"}, {dtype.Bool, true, "u8"}, {dtype.Uint8, true, "u8"}, {dtype.Complex128, false, ""},
	} {
		if got := BoundsClass(c.dt, c.narrow); got != c.want {
			t.Errorf("BoundsClass(%v, narrow %v) = %q, want %q", c.dt, c.narrow, got, c.want)
		}
	}
}

// TestBoundsCompactPTX chains, in the PTX interpreter, what a GPU compute of UniqueCounts does:
// the run starts and ends of sorted int64 words marked (BoundsPTX), then the positions array,
// in three chunks, compacted with those marks from each chunk's offset (CompactPTX's count,
// the running sums, the scatter): the selected positions give each distinct value's first
// position and its count, as the host's walk over the sorted values.
func TestBoundsCompactPTX(t *testing.T) {
	rs := rand.New(rand.NewPCG(7, 32))
	const n = 5000
	const srcAt, marksAt, posAt, countsAt, outAt = 1 << 20, 1 << 24, 1 << 26, 1 << 30, 1 << 32
	vals := make([]int64, n)
	for i := range vals {
		vals[i] = int64(rs.IntN(700)) - 350
	}
	slices.Sort(vals)
	var wantFirst, wantCount []int64
	for i := range vals {
		if i == 0 || vals[i] != vals[i-1] {
			wantFirst = append(wantFirst, int64(i))
			wantCount = append(wantCount, 0)
		}
		wantCount[len(wantCount)-1]++
	}
	selected := func(last bool) []int64 {
		mem := map[uint64]uint64{}
		for i, v := range vals {
			mem[srcAt+uint64(8*i)] = uint64(v)
			mem[posAt+uint64(8*i)] = uint64(i)
		}
		for i := 0; i < n; i += 8 {
			mem[marksAt+uint64(i)] = 0
		}
		text, _, err := ptx.BoundsPTX("8.0", "sm_90", "u64", last)
		if err != nil {
			t.Fatal(err)
		}
		p := ptxtest.Parse(t, text)
		for b := range (n + BlockSize - 1) / BlockSize {
			ptxtest.Run(t, p, b, 0, map[string]uint64{"src": srcAt, "n": n, "out": marksAt}, mem, nil)
		}
		count, _, err := ptx.CompactPTX("8.0", "sm_90", 1, 0, false)
		if err != nil {
			t.Fatal(err)
		}
		scatter, _, err := ptx.CompactPTX("8.0", "sm_90", 1, 8, true)
		if err != nil {
			t.Fatal(err)
		}
		pc, ps := ptxtest.Parse(t, count), ptxtest.Parse(t, scatter)
		var got []int64
		for _, c := range [][2]int{{0, 1700}, {1700, 3001}, {3001, n}} { // the positions' chunks
			rows := uint64(c[1] - c[0])
			mask, src := uint64(marksAt+c[0]), uint64(posAt+8*c[0])
			segs := (rows + ptx.CompactSeg - 1) / ptx.CompactSeg
			blocks := int((segs + BlockSize - 1) / BlockSize)
			for b := range blocks {
				ptxtest.Run(t, pc, b, 0, map[string]uint64{"mask": mask, "n": rows, "counts": countsAt}, mem, nil)
			}
			var run uint64
			for s := range segs {
				run += mem[countsAt+8*s]
				mem[countsAt+8*s] = run
			}
			for i := range run {
				mem[outAt+8*i] = 0
			}
			for b := range blocks {
				ptxtest.Run(t, ps, b, 0, map[string]uint64{"mask": mask, "n": rows, "counts": countsAt, "src": src, "out": outAt, "words": 1}, mem, nil)
			}
			for i := range run {
				got = append(got, int64(mem[outAt+8*i]))
			}
		}
		return got
	}
	first, last := selected(false), selected(true)
	if !slices.Equal(first, wantFirst) {
		t.Fatalf("%d run starts selected, want %d (or they differ)", len(first), len(wantFirst))
	}
	if len(last) != len(first) {
		t.Fatalf("%d run ends, %d starts", len(last), len(first))
	}
	for i := range first {
		if got := last[i] - first[i] + 1; got != wantCount[i] {
			t.Fatalf("value %d: count %d, want %d", vals[first[i]], got, wantCount[i])
		}
	}
}
