package cuda

import (
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx/ptxtest"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// randomChunked returns a random array shape of rank r, a chunk grid of it, and each chunk's
// corner and shape, row-major chunk order.
func randomChunked(rs *rand.Rand, r int) (shape []int, offs, shapes [][]int) {
	shape = make([]int, r)
	bounds := make([][]int, r)
	for d := range shape {
		shape[d] = 2 + rs.IntN(9)
		b := []int{0}
		for b[len(b)-1] < shape[d] {
			b = append(b, min(shape[d], b[len(b)-1]+1+rs.IntN(4)))
		}
		bounds[d] = b
	}
	idx := make([]int, r)
	for {
		off, sh := make([]int, r), make([]int, r)
		for d := range idx {
			off[d], sh[d] = bounds[d][idx[d]], bounds[d][idx[d]+1]-bounds[d][idx[d]]
		}
		offs, shapes = append(offs, off), append(shapes, sh)
		d := r - 1
		for ; d >= 0; d-- {
			if idx[d]++; idx[d] < len(bounds[d])-1 {
				break
			}
			idx[d] = 0
		}
		if d < 0 {
			return shape, offs, shapes
		}
	}
}

// TestJoinKernelCopiesHeldPieces: the generated join kernels, interpreted, fill a random box
// of a random chunked array from the chunks it meets (plan.HeldJoin) with exactly the box's
// values: 8-byte words (and complex pairs of them), elements of 4, 2 and 1 bytes kept in their
// size, and 4-byte floats widened to float64 words; nothing outside the box's buffer is
// written.
func TestJoinKernelCopiesHeldPieces(t *testing.T) {
	rs := rand.New(rand.NewPCG(11, 12))
	progs := map[string]*ptxtest.Program{}
	for round := range 60 {
		r := 1 + round%3
		unit := []joinUnit{joinWords, {size: 4}, joinWiden, {size: 2}, {size: 1}}[(round/3)%5]
		words := 1
		if unit == joinWords && round%2 == 0 {
			words = 2 // complex values: two words per element
		}
		mask := uint64(1)<<(8*unit.size) - 1
		if unit.size == 8 {
			mask = math.MaxUint64
		}
		shape, offs, shapes := randomChunked(rs, r)
		// The array's units: words per element, or one 4-byte float each.
		per := words
		val := func(flat int64, w int) uint64 { return uint64(flat*7+int64(w))*0x9e3779b97f4a7c15 | 1 }
		if unit != joinWords {
			per = 1
			val = func(flat int64, _ int) uint64 { return (uint64(flat)*2654435761 + 12345) & mask }
		}
		mem := map[uint64]uint64{}
		join := &plan.HeldJoin{}
		strides := rowStrides(shape)
		for i := range offs {
			base := uint64(1)<<36 + uint64(i)<<24
			cs := rowStrides(shapes[i])
			n := expr.Size(shapes[i])
			for e := int64(0); e < n; e++ {
				flat := int64(0)
				for d := range r {
					flat += (int64(offs[i][d]) + e/cs[d]%int64(shapes[i][d])) * strides[d]
				}
				for w := range per {
					if unit == joinWords {
						mem[base+uint64(8*(e*int64(per)+int64(w)))] = val(flat, w)
					} else {
						at := base + uint64(int64(unit.size)*e)
						mem[at&^7] |= val(flat, w) << (8 * (at & 7))
					}
				}
			}
			join.Pieces = append(join.Pieces, plan.HeldPiece{Ptr: uintptr(base), Origin: offs[i], Shape: shapes[i]})
		}
		origin, box := make([]int, r), make([]int, r)
		for d := range box {
			origin[d] = rs.IntN(shape[d])
			box[d] = 1 + rs.IntN(shape[d]-origin[d])
		}
		b := &plan.Block{Origin: origin, Shape: box, Held: &plan.Held{Ptr: join.Pieces[0].Ptr, Narrow: unit != joinWords, Join: join}}
		copies := joinCopies(b, words)
		const dst = uint64(1) << 44
		for _, c := range copies {
			name := joinName(len(c.Shape), unit)
			p, ok := progs[name]
			if !ok {
				text := joinPTX("8.0", "sm_80", len(c.Shape), unit)
				if !strings.Contains(text, ".visible .entry "+name+"(") {
					t.Fatalf("the join kernel lacks its entry %s:\n%s", name, text)
				}
				p = ptxtest.Parse(t, text)
				progs[name] = p
			}
			params := map[string]uint64{"src": uint64(c.Ptr) + uint64(c.Src*unit.srcBytes()), "dst": dst + uint64(c.Dst*unit.dstBytes()), "n": uint64(c.Elements()), "nctaid.x": 2}
			for k := range c.Shape {
				params["len"+strconv.Itoa(k)], params["ss"+strconv.Itoa(k)], params["ds"+strconv.Itoa(k)] = uint64(c.Shape[k]), uint64(c.SrcStrides[k]), uint64(c.DstStrides[k])
			}
			for bx := range 2 {
				ptxtest.Run(t, p, bx, 0, params, mem, nil)
			}
		}
		// Every element of the box, in the buffer's format.
		bs := rowStrides(box)
		n := expr.Size(box)
		written := 0
		for at := range mem {
			if at >= dst {
				written++
			}
		}
		for e := int64(0); e < n; e++ {
			flat := int64(0)
			for d := range r {
				flat += (int64(origin[d]) + e/bs[d]%int64(box[d])) * strides[d]
			}
			for w := range per {
				var got, want uint64
				switch unit {
				case joinWords:
					got, want = mem[dst+uint64(8*(e*int64(per)+int64(w)))], val(flat, w)
				case joinWiden:
					got = mem[dst+uint64(8*e)]
					want = widened(val(flat, w))
				default:
					at := dst + uint64(int64(unit.size)*e)
					got, want = mem[at&^7]>>(8*(at&7))&mask, val(flat, w)
				}
				if got != want {
					t.Fatalf("round %d (%s, rank %d, array %v, box %v at %v, %d copies): element %d unit %d is %#x, want %#x",
						round, unit, r, shape, box, origin, len(copies), e, w, got, want)
				}
			}
		}
		wantWords := int(n) * per
		if unit != joinWords && !unit.widen {
			wantWords = (int(n)*unit.size + 7) / 8
		}
		if written != wantWords {
			t.Fatalf("round %d: %d words written, want %d", round, written, wantWords)
		}
		for at := range mem {
			if at >= dst {
				delete(mem, at)
			}
		}
	}
}

func rowStrides(shape []int) []int64 {
	s := make([]int64, len(shape))
	st := int64(1)
	for d := len(shape) - 1; d >= 0; d-- {
		s[d] = st
		st *= int64(shape[d])
	}
	return s
}

// widened is the float64 word of the 4-byte float with bits f.
func widened(f uint64) uint64 {
	return math.Float64bits(float64(math.Float32frombits(uint32(f))))
}
