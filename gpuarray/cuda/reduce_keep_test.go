package cuda

import (
	"fmt"
	"github.com/gpunotes/gpunotes/gpuarray/cuda/ptx"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// runCombine interprets the straight-line combine kernel (combinePTX) for every thread of
// every group on host memory mem (byte address -> 64-bit word), the instructions it uses only.
func runCombine(t *testing.T, text string, groups int, maxK int64, desc, parts uint64, mem map[uint64]uint64) {
	t.Helper()
	body := text[strings.Index(text, "{\n")+2 : strings.LastIndex(text, "}")]
	var lines []string
	labels := map[string]int{}
	for _, l := range strings.Split(body, "\n") {
		l = strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(l), ";"))
		if l == "" || strings.HasPrefix(l, ".reg") {
			continue
		}
		if strings.HasSuffix(l, ":") {
			labels[strings.TrimSuffix(l, ":")] = len(lines)
			continue
		}
		lines = append(lines, l)
	}
	for gy := range groups {
		for q := range maxK {
			reg := map[string]uint64{}
			val := func(s string) uint64 {
				switch {
				case strings.HasPrefix(s, "%ctaid.y"):
					return uint64(gy)
				case strings.HasPrefix(s, "%ctaid.x"):
					return uint64(q / BlockSize)
				case strings.HasPrefix(s, "%tid.x"):
					return uint64(q % BlockSize)
				case strings.HasPrefix(s, "%"):
					return reg[s]
				case strings.HasPrefix(s, "0d"):
					v, _ := strconv.ParseUint(s[2:], 16, 64)
					return v
				}
				v, err := strconv.ParseInt(s, 10, 64)
				if err != nil {
					t.Fatalf("operand %q", s)
				}
				return uint64(v)
			}
			addr := func(s string) uint64 { // [r] or [r+off]
				s = strings.Trim(s, "[]")
				if i := strings.Index(s, "+"); i >= 0 {
					return val(s[:i]) + val(s[i+1:])
				}
				return val(s)
			}
			f := math.Float64frombits
			b := math.Float64bits
			for pc := 0; pc < len(lines); pc++ {
				l := lines[pc]
				if strings.HasPrefix(l, "@") {
					sp := strings.Index(l, " ")
					if reg[l[1:sp]] == 0 {
						continue
					}
					l = l[sp+1:]
				}
				op, rest, _ := strings.Cut(l, " ")
				a := strings.Split(rest, ", ")
				switch op {
				case "ret":
					pc = len(lines)
				case "bra":
					pc = labels[a[0]] - 1
				case "ld.param.u64":
					reg[a[0]] = map[string]uint64{"[desc]": desc, "[parts]": parts}[a[1]]
				case "cvta.to.global.u64", "mov.u32", "cvt.u64.u32":
					reg[a[0]] = val(a[1])
				case "mul.wide.u32", "mul.lo.u64":
					reg[a[0]] = val(a[1]) * val(a[2])
				case "mov.f64":
					reg[a[0]] = val(a[1])
				case "sub.rn.f64":
					reg[a[0]] = b(f(val(a[1])) - f(val(a[2])))
				case "mul.rn.f64":
					reg[a[0]] = b(f(val(a[1])) * f(val(a[2])))
				case "sqrt.rn.f64":
					reg[a[0]] = b(math.Sqrt(f(val(a[1]))))
				case "setp.neu.f64":
					reg[a[0]] = map[bool]uint64{true: 1}[!(f(val(a[1])) == f(val(a[2])))]
				case "setp.eq.f64":
					reg[a[0]] = map[bool]uint64{true: 1}[f(val(a[1])) == f(val(a[2]))]
				case "and.pred":
					reg[a[0]] = map[bool]uint64{true: 1}[val(a[1]) != 0 && val(a[2]) != 0]
				case "add.u64":
					reg[a[0]] = val(a[1]) + val(a[2])
				case "shl.b64":
					reg[a[0]] = val(a[1]) << val(a[2])
				case "setp.ge.u64":
					reg[a[0]] = map[bool]uint64{true: 1}[val(a[1]) >= val(a[2])]
				case "ld.global.nc.u64", "ld.global.nc.f64":
					w, ok := mem[addr(a[1])]
					if !ok {
						t.Fatalf("group %d thread %d: %s reads unwritten memory at %#x", gy, q, l, addr(a[1]))
					}
					reg[a[0]] = w
				case "add.rn.f64":
					reg[a[0]] = b(f(val(a[1])) + f(val(a[2])))
				case "div.rn.f64":
					reg[a[0]] = b(f(val(a[1])) / f(val(a[2])))
				case "cvt.rn.f32.f64", "cvt.f64.f32":
					reg[a[0]] = b(float64(float32(f(val(a[1])))))
				case "st.global.f64":
					mem[addr(a[0])] = val(a[1])
				default:
					t.Fatalf("instruction %q not interpreted", l)
				}
			}
		}
	}
}

// TestCombineKernelMatchesHostOrder: the combine kernel of RunPlanSumKeep, interpreted on the
// host, gives each group's values bit for bit as the host's combine does (collectAxes's
// pairwise sum of a task's slices, then plan's pairwise tree over the group's tasks, the mean's
// division and the float32 rounding), on values whose sums depend on the order, and writes
// nothing past a group's K elements.
func TestCombineKernelMatchesHostOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := range 60 {
		sl := combineSlices(r)
		G := len(sl)
		divisor := 0.0
		if r.IntN(2) == 0 {
			divisor = float64(1 + r.IntN(1000))
		}
		f32 := r.IntN(3) == 0
		name := ptx.CombineName(sl, divisor, f32)
		text := ptx.CombinePTX("8.0", "sm_90", name, sl, divisor, f32)
		Ks, maxK := combineGroups(r, 300)
		groups := len(Ks)
		// Partials of every group's tasks, slot off_j + b*K + q, at order-sensitive magnitudes.
		mem := map[uint64]uint64{}
		var slot uint64
		want := map[uint64]uint64{}
		for g, K := range Ks {
			out, first, next := describeGroup(mem, g, sl, K, slot)
			slot = next
			taskVals := make([][]float64, G)
			for j := range G {
				taskVals[j] = make([]float64, sl[j]*K)
				for i := range taskVals[j] {
					v := math.Ldexp(r.Float64()-0.5, r.IntN(120)-60)
					taskVals[j][i] = v
					mem[combineParts+8*(first[j]+uint64(i))] = math.Float64bits(v)
				}
			}
			for q := range K {
				per := make([]float64, G)
				for j := range G {
					xs := make([]float64, sl[j])
					for b := range xs {
						xs[b] = taskVals[j][int64(b)*K+q]
					}
					per[j] = PairwiseSum(xs)
				}
				v := hostTree(per)
				if divisor != 0 {
					v /= divisor
				}
				if f32 {
					v = float64(float32(v))
				}
				want[out+uint64(8*q)] = math.Float64bits(v)
			}
		}
		runCombine(t, text, groups, maxK, combineDesc, combineParts, mem)
		checkCombined(t, fmt.Sprintf("trial %d (slices %v, divisor %v, f32 %v)", trial, sl, divisor, f32), mem, want, combineOut)
		if !strings.Contains(text, ".visible .entry "+name+"(") {
			t.Fatalf("no entry %s", name)
		}
	}
}

// combineSlices draws a combine kernel's tasks (1 to 6) and each one's slices (1 to 5).
func combineSlices(r *rand.Rand) []int64 {
	sl := make([]int64, 1+r.IntN(6))
	for j := range sl {
		sl[j] = int64(1 + r.IntN(5))
	}
	return sl
}

// combineGroups draws a combine kernel's groups (1 to 3), each one's kept elements (1 to
// most), and the largest of them.
func combineGroups(r *rand.Rand, most int) (Ks []int64, maxK int64) {
	Ks = make([]int64, 1+r.IntN(3))
	for g := range Ks {
		Ks[g] = int64(1 + r.IntN(most))
		maxK = max(maxK, Ks[g])
	}
	return Ks, maxK
}

// Where the combine tests place things in the interpreter's memory: the partials from
// combineParts (slot s at byte 8s, or 24s for Welford's three words), the groups' descriptors
// from combineDesc, group g's output from combineOut + g<<24.
const combineParts, combineDesc, combineOut = 1 << 20, 1 << 30, 1 << 40

// describeGroup writes the descriptor of group g, whose tasks have sl slices of K kept
// elements each and whose partials start at slot: K, the output's address (returned), each
// task's first slot (returned in first); next is the slot after the group's partials.
func describeGroup(mem map[uint64]uint64, g int, sl []int64, K int64, slot uint64) (out uint64, first []uint64, next uint64) {
	at := uint64(combineDesc + g*(2+len(sl))*8)
	out = uint64(combineOut + g<<24)
	mem[at], mem[at+8] = uint64(K), out
	first = make([]uint64, len(sl))
	for j := range sl {
		mem[at+16+8*uint64(j)] = slot
		first[j] = slot
		slot += uint64(sl[j] * K)
	}
	return out, first, slot
}

// checkCombined fails unless every word the host wants is in mem (the same bits, or NaN for
// NaN: the sums' inputs are finite, so only the Welford kernel's can be NaN) and the kernel
// wrote no word at or past outAt that is not one of them.
func checkCombined(t *testing.T, what string, mem, want map[uint64]uint64, outAt uint64) {
	t.Helper()
	for a, w := range want {
		if mem[a] != w && !(math.IsNaN(math.Float64frombits(mem[a])) && math.IsNaN(math.Float64frombits(w))) {
			t.Fatalf("%s: word at %#x is %v, want %v", what, a, math.Float64frombits(mem[a]), math.Float64frombits(w))
		}
	}
	for a := range mem {
		if a >= outAt {
			if _, ok := want[a]; !ok {
				t.Fatalf("%s: the kernel wrote %#x, past its group's elements", what, a)
			}
		}
	}
}

// hostTree is plan.Stage.Assemble's combine of a group's partial sums: the left half, the
// right half, then the two.
func hostTree(xs []float64) float64 {
	if len(xs) == 1 {
		return xs[0]
	}
	h := len(xs) / 2
	return hostTree(xs[:h]) + hostTree(xs[h:])
}

// TestWelfordCombineKernelMatchesHost: the combine kernel of RunPlanWelfordKeep, interpreted
// on the host, gives each group's variances and standard deviations bit for bit as the host
// does: collectAxes's merge of a task's slices, plan.Combine's tree over the group's tasks,
// then M2 / count, the square root, the float32 rounding (plan.Stage.Assemble's steps), with
// slices that reduced nothing (count 0) among them.
func TestWelfordCombineKernelMatchesHost(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	spec := &Spec{Rank: 2, Kept: 1, Reduce: RWelford, Nodes: []Node{{Kind: NInput, DType: expr.Float64}}}
	for trial := range 60 {
		sl := combineSlices(r)
		G := len(sl)
		std, f32 := r.IntN(2) == 0, r.IntN(3) == 0
		name := ptx.WelfordCombineName(sl, std, f32)
		text := ptx.WelfordCombinePTX("8.0", "sm_90", name, sl, std, f32)
		Ks, maxK := combineGroups(r, 200)
		groups := len(Ks)
		mem := map[uint64]uint64{}
		var slot uint64
		want := map[uint64]uint64{}
		for g, K := range Ks {
			out, first, next := describeGroup(mem, g, sl, K, slot)
			slot = next
			var words []uint64
			offs := make([]int64, G)
			for j := range G {
				offs[j] = int64(len(words) / 3)
				for e := range uint64(sl[j] * K) {
					n := float64(r.IntN(5000))
					if r.IntN(8) == 0 {
						n = 0
					}
					m := 1000 + r.NormFloat64()*3
					q := n * 9 * (1 + r.Float64())
					if n == 0 {
						m, q = 0, 0
					}
					for w, v := range []float64{n, m, q} {
						// A slot holds an element's three words.
						mem[combineParts+8*(3*(first[j]+e)+uint64(w))] = math.Float64bits(v)
						words = append(words, math.Float64bits(v))
					}
				}
			}
			outs := make([]*plan.Output, G)
			for j := range G {
				p := collectAxes(spec, words, offs[j], K, sl[j])
				outs[j] = &plan.Output{Shape: []int{int(K)}, Data: dtype.OfFloat64(p.Count), Aux: [][]float64{p.Mean, p.M2}}
			}
			red := expr.Var
			if std {
				red = expr.Std
			}
			var tree func(ps []*plan.Output) *plan.Output
			tree = func(ps []*plan.Output) *plan.Output {
				if len(ps) == 1 {
					return ps[0]
				}
				h := len(ps) / 2
				c, err := plan.Combine(red, tree(ps[:h]), tree(ps[h:]))
				if err != nil {
					t.Fatal(err)
				}
				return c
			}
			c := tree(outs)
			for q := range K {
				v := c.Aux[1][q] / c.Data.Float64s()[q]
				if std {
					v = math.Sqrt(v)
				}
				if f32 {
					v = float64(float32(v))
				}
				want[out+uint64(8*q)] = math.Float64bits(v)
			}
		}
		runCombine(t, text, groups, maxK, combineDesc, combineParts, mem)
		checkCombined(t, fmt.Sprintf("trial %d (slices %v, std %v, f32 %v)", trial, sl, std, f32), mem, want, combineOut)
	}
}
