package gpuarray

import (
	"errors"
	"math"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// heldBuffer stands for values held off the host: it counts reads and can fail them.
type heldBuffer struct {
	vals  []float64
	reads int
	err   error
}

func (b *heldBuffer) Values() (dtype.Slice, error) {
	b.reads++
	return dtype.OfFloat64(b.vals), b.err
}

func (b *heldBuffer) Where() string { return "gpu 7" }

// heldNode returns a 4 x 3 data node (values 0..11, row chunks of 2) whose values a heldBuffer
// holds.
func heldNode(t *testing.T) (*heldBuffer, *expr.Node) {
	t.Helper()
	vals := make([]float64, 12)
	for i := range vals {
		vals[i] = float64(i)
	}
	buf := &heldBuffer{vals: vals}
	n, err := expr.NewBuffered(buf, []int{4, 3}, [][]int{{2, 2}, {3}})
	if err != nil {
		t.Fatal(err)
	}
	return buf, n
}

// TestBufferedArrays: an array whose values another memory holds reads like any computed
// array (Compute, ToSlice, elementwise work, reductions, products) and its read errors say
// where the values were.
func TestBufferedArrays(t *testing.T) {
	buf, n := heldNode(t)
	vals := buf.vals
	a := &Array{n: n}
	if a.Where() != "gpu 7" || a.Add(1).Where() != "" || FromSlice(vals, Shape(4, 3)).Where() != "host" {
		t.Errorf("Where: %q, %q, %q", a.Where(), a.Add(1).Where(), FromSlice(vals, Shape(4, 3)).Where())
	}
	c, err := a.Compute()
	if err != nil || c.Where() != "gpu 7" || buf.reads != 1 {
		t.Fatalf("Compute: %v, where %q, %d reads", err, c.Where(), buf.reads)
	}
	got, err := a.ToSlice()
	if err != nil || len(got) != 12 || got[11] != 11 {
		t.Fatalf("ToSlice: %v %v", got, err)
	}
	s, err := a.Mul(2).Add(1).Sum().Float64()
	if err != nil || s != 2*66+12 {
		t.Errorf("fused sum over the buffer: %v, %v", s, err)
	}
	p, err := MatMul(a.T(), a).ToSlice(Inline())
	if err != nil || math.Abs(p[0]-(0+9+36+81)) > 1e-12 {
		t.Errorf("product over the buffer: %v, %v", p, err)
	}
	buf.err = errors.New("device lost")
	_, err = a.Sum().Float64()
	if err == nil || !strings.Contains(err.Error(), "values held on gpu 7") || !strings.Contains(err.Error(), "device lost") {
		t.Errorf("a failing read: %v", err)
	}
	buf.err, buf.vals = nil, vals[:5]
	if _, err := a.ToSlice(); err == nil || !strings.Contains(err.Error(), "5 elements") {
		t.Errorf("a buffer of the wrong size: %v", err)
	}
	if _, err := expr.NewBuffered(nil, []int{1}, [][]int{{1}}); err == nil {
		t.Error("a nil buffer must be refused")
	}
}

// gpuProduct computes MatMul(a, b) with OnGPU (the product kept on the device where it fits).
func gpuProduct(t *testing.T, a, b *Array) *Array {
	t.Helper()
	c, err := MatMul(a, b).Compute(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestHeldOnGPU: with a GPU, a product and a tall SVD computed there stay there (Where, the
// repr), read back equal to the CPU's, feed a further product in place, and Release (or the
// garbage collector) gives their memory back to the pool.
func TestHeldOnGPU(t *testing.T) {
	needGPU(t)
	rs := NewRandomState(11)
	x := rs.StandardNormal(Shape(500, 300), Chunks(128, 100))
	y := rs.StandardNormal(Shape(300, 200), Chunks(100, 64))
	c := gpuProduct(t, x, y)
	if err := c.Err(); err != nil {
		t.Fatal(err)
	}
	if c.Where() != "gpu 0" || !strings.Contains(c.String(), "on gpu 0") || !strings.Contains(c.HTML(), "computed, on gpu 0") {
		t.Fatalf("product: where %q, %s", c.Where(), c.String())
	}
	b, ok := c.n.Buf.(*deviceBuffer)
	if !ok {
		t.Fatalf("product buffer %T", c.n.Buf)
	}
	inUse := func() uint64 {
		var n uint64
		_ = b.dev.Do(t.Context(), func() error { n = b.dev.Pool().InUse(); return nil })
		return n
	}
	// C·z with C used in place: the same as the CPU's product of the copied values.
	z := rs.StandardNormal(Shape(200, 50), Chunks(64, 50))
	cz := gpuProduct(t, c, z)
	if b.copied() {
		t.Error("using C on the GPU copied it to the host")
	}
	want := values(t, MatMul(x, y))
	got := values(t, c)
	closeTo(t, "C", got, want, 1e-12)
	czWant := values(t, MatMul(FromSlice(got, Shape(500, 200), Chunks(128, 64)), z))
	closeTo(t, "C z", values(t, cz), czWant, 1e-11)
	before := inUse()
	c.Release()
	if after := inUse(); before-after < 500*200*8 {
		t.Errorf("Release gave back %d bytes, want at least %d", before-after, 500*200*8)
	}
	if v, err := c.ToSlice(); err != nil || len(v) != 500*200 {
		t.Errorf("values copied before Release must stay readable: %d, %v", len(v), err)
	}
	cz.Release()
	d := gpuProduct(t, x, y)
	d.Release()
	if _, err := d.ToSlice(); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("reading a released array: %v", err)
	}
	if !strings.Contains(d.String(), "released from gpu 0") {
		t.Errorf("repr of a released array: %s", d.String())
	}

	// Fused GPU kernels read a held array in place (no copy to the host), also as an operand
	// of a further product; a view whose chunks straddle its row panels reads the host copy.
	e2 := gpuProduct(t, x, y)
	eb := e2.n.Buf.(*deviceBuffer)
	wantSum := 0.0
	for _, v := range want {
		wantSum += 2*v + 1
	}
	gotSum, err := e2.Mul(2).Add(1).Sum().Float64(OnGPU())
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(gotSum-wantSum) > 1e-9*math.Abs(wantSum)+1e-9 {
		t.Errorf("sum over the held product on the GPU = %v, CPU %v", gotSum, wantSum)
	}
	p2 := values(t, gpuProduct(t, e2.Mul(2), z))
	if eb.copied() {
		t.Error("GPU work on the held product copied it to the host")
	}
	twice := make([]float64, len(czWant))
	for i, v := range czWant {
		twice[i] = 2 * v
	}
	closeTo(t, "(2 C) z", p2, twice, 1e-10)
	gotT, err := e2.T().Rechunk(200, 500).Sum().Float64(OnGPU())
	if err != nil || math.Abs(gotT-(wantSum-float64(len(want)))/2) > 1e-9*math.Abs(wantSum)+1e-9 {
		t.Errorf("sum over a rechunked transpose of the held product: %v, %v (want %v)", gotT, err, (wantSum-float64(len(want)))/2)
	}
	// Release waits for computations that have the array pinned.
	unpin := pinGraph(e2.Add(1).n)
	released := make(chan struct{})
	go func() { e2.Release(); close(released) }()
	select {
	case <-released:
		t.Error("Release returned while a computation had the array pinned")
	case <-time.After(50 * time.Millisecond):
	}
	unpin()
	select {
	case <-released:
	case <-time.After(5 * time.Second):
		t.Fatal("Release did not return after the computation unpinned the array")
	}
	if eb.panel(0) != 0 {
		t.Error("the panels are still there after Release")
	}

	// The garbage collector gives back what nobody holds (at the pool's next allocation).
	base := inUse()
	func() {
		e := gpuProduct(t, x, y)
		if e.Err() != nil || inUse() <= base {
			t.Fatalf("held product: %v, pool %d -> %d", e.Err(), base, inUse())
		}
	}()
	for i := 0; i < 50 && inUse() > base; i++ {
		runtime.GC()
		time.Sleep(10 * time.Millisecond)
		_ = b.dev.Do(t.Context(), func() error {
			p, err := b.dev.Pool().Alloc(8)
			if err == nil {
				b.dev.Pool().Free(p)
			}
			return err
		})
	}
	if got := inUse(); got > base {
		t.Errorf("after the product became unreachable the pool holds %d bytes, %d before", got, base)
	}
}

// TestPlanReadsHeldBlocks: with a Held hook, tasks read the boxes the hook places in device
// memory and copy the others from the host values, which are read once per stage; without
// one, every task copies.
func TestPlanReadsHeldBlocks(t *testing.T) {
	buf, n := heldNode(t)
	root := (&Array{n: n}).Add(1).n
	var asked [][2][]int
	hook := func(k *plan.Kernel, x *expr.Node, lo, hi []int) (plan.Block, bool) {
		if x != n {
			t.Errorf("asked about node %p, not the held one", x)
		}
		asked = append(asked, [2][]int{lo, hi})
		if lo[0] == 0 { // the first row chunk is "on the device"
			return plan.Block{Origin: []int{0, 0}, Shape: []int{2, 3}, Held: &plan.Held{Device: 7, Ptr: 0x1000}}, true
		}
		return plan.Block{}, false
	}
	st, err := plan.Lower(0, root, map[*expr.Node]dtype.Slice{}, plan.Options{Held: hook})
	if err != nil {
		t.Fatal(err)
	}
	if len(st.Tasks) != 2 || len(asked) != 2 || buf.reads != 1 {
		t.Fatalf("%d tasks, %d boxes asked about, %d host reads", len(st.Tasks), len(asked), buf.reads)
	}
	if h := st.Tasks[0].Inputs[0]; h.Held == nil || h.Held.Ptr != 0x1000 || !h.Data.IsNil() {
		t.Errorf("task 0 input: %+v", h)
	}
	if h := st.Tasks[1].Inputs[0]; h.Held != nil || h.Data.Len() != 6 || h.Data.Float(0) != 6 {
		t.Errorf("task 1 input: %+v", h)
	}
	if !slices.Equal(asked[1][0], []int{2, 0}) || !slices.Equal(asked[1][1], []int{3, 2}) {
		t.Errorf("task 1's box: %v", asked[1])
	}
	st, err = plan.Lower(0, root, map[*expr.Node]dtype.Slice{}, plan.Options{})
	if err != nil || st.Tasks[0].Inputs[0].Held != nil || st.Tasks[0].Inputs[0].Data.Len() != 6 {
		t.Errorf("without a hook: %v, %+v", err, st.Tasks[0].Inputs[0])
	}
}

// values returns a's elements, failing the test on an error.
func values(t *testing.T, a *Array) []float64 {
	t.Helper()
	v, err := a.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// closeTo fails the test where got and want differ by more than tol relative (plus tol).
func closeTo(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", what, len(got), len(want))
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > tol*(1+math.Abs(want[i])) {
			t.Fatalf("%s[%d] = %v, CPU %v", what, i, got[i], want[i])
		}
	}
}
