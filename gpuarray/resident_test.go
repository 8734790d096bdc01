package gpuarray

import (
	"errors"
	"math"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

// heldBuffer stands for values held off the host: it counts reads and can fail them.
type heldBuffer struct {
	vals  []float64
	reads int
	err   error
}

func (b *heldBuffer) Values() ([]float64, error) {
	b.reads++
	return b.vals, b.err
}

func (b *heldBuffer) Where() string { return "gpu 7" }

// TestBufferedArrays: an array whose values another memory holds reads like any computed
// array (Compute, ToSlice, elementwise work, reductions, products) and its read errors say
// where the values were.
func TestBufferedArrays(t *testing.T) {
	vals := make([]float64, 12)
	for i := range vals {
		vals[i] = float64(i)
	}
	buf := &heldBuffer{vals: vals}
	n, err := expr.NewBuffered(buf, []int{4, 3}, [][]int{{2, 2}, {3}})
	if err != nil {
		t.Fatal(err)
	}
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
	p, err := MatMul(a.T(), a, Inline()).ToSlice()
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

// TestHeldOnGPU: with a GPU, a product and a tall SVD computed there stay there (Where, the
// repr), read back equal to the CPU's, feed a further product in place, and Release (or the
// garbage collector) gives their memory back to the pool.
func TestHeldOnGPU(t *testing.T) {
	needGPU(t)
	rs := NewRandomState(11)
	x := rs.StandardNormal(Shape(500, 300), Chunks(128, 100))
	y := rs.StandardNormal(Shape(300, 200), Chunks(100, 64))
	c := MatMul(x, y, OnGPU())
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
	cz := MatMul(c, z, OnGPU())
	if b.copied() {
		t.Error("using C on the GPU copied it to the host")
	}
	want, err := MatMul(x, y).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	got, err := c.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if math.Abs(got[i]-want[i]) > 1e-12*(1+math.Abs(want[i])) {
			t.Fatalf("C[%d] = %v, CPU %v", i, got[i], want[i])
		}
	}
	czWant, err := MatMul(FromSlice(got, Shape(500, 200), Chunks(128, 64)), z).ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	czGot, err := cz.ToSlice()
	if err != nil {
		t.Fatal(err)
	}
	for i := range czWant {
		if math.Abs(czGot[i]-czWant[i]) > 1e-11*(1+math.Abs(czWant[i])) {
			t.Fatalf("(C z)[%d] = %v, CPU %v", i, czGot[i], czWant[i])
		}
	}
	before := inUse()
	c.Release()
	if after := inUse(); before-after < 500*200*8 {
		t.Errorf("Release gave back %d bytes, want at least %d", before-after, 500*200*8)
	}
	if v, err := c.ToSlice(); err != nil || len(v) != 500*200 {
		t.Errorf("values copied before Release must stay readable: %d, %v", len(v), err)
	}
	cz.Release()
	d := MatMul(x, y, OnGPU())
	d.Release()
	if _, err := d.ToSlice(); err == nil || !strings.Contains(err.Error(), "released") {
		t.Errorf("reading a released array: %v", err)
	}
	if !strings.Contains(d.String(), "released from gpu 0") {
		t.Errorf("repr of a released array: %s", d.String())
	}

	// The garbage collector gives back what nobody holds (at the pool's next allocation).
	base := inUse()
	func() {
		e := MatMul(x, y, OnGPU())
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

// TestHostBufferUnmapsWithItsOwner: a held array's host copy is fresh zeroed memory, and it
// goes back to the system once the buffer that owns it is unreachable.
func TestHostBufferUnmapsWithItsOwner(t *testing.T) {
	base := mapped.Load()
	func() {
		owner := &deviceBuffer{}
		v, err := hostBuffer(owner, 1<<20)
		if err != nil {
			t.Fatal(err)
		}
		for i, x := range v {
			if x != 0 {
				t.Fatalf("element %d = %v in fresh memory", i, x)
			}
		}
		v[len(v)-1] = 3
		if got := mapped.Load() - base; got != 8<<20 {
			t.Fatalf("mapped %d bytes, want %d", got, 8<<20)
		}
		runtime.KeepAlive(owner)
	}()
	for i := 0; i < 100 && mapped.Load() > base; i++ {
		runtime.GC()
		time.Sleep(5 * time.Millisecond)
	}
	if got := mapped.Load(); got != base {
		t.Errorf("after the owner became unreachable %d bytes stay mapped, %d before", got, base)
	}
}
