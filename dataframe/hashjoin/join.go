package hashjoin

import (
	"errors"
	"fmt"
	"math/bits"
)

// How is a join kind.
type How int

// The join kinds, as pandas names them (Semi and Anti keep left rows with and without a
// match).
const (
	Inner How = iota
	Left
	Right
	Outer
	Semi
	Anti
)

// String returns the kind's pandas name.
func (h How) String() string {
	switch h {
	case Inner:
		return "inner"
	case Left:
		return "left"
	case Right:
		return "right"
	case Outer:
		return "outer"
	case Semi:
		return "semi"
	case Anti:
		return "anti"
	}
	return fmt.Sprintf("How(%d)", int(h))
}

// ParseHow returns the kind named s ("inner", "left", "right", "outer", "semi", "anti"; also
// pandas 3's "left_anti").
func ParseHow(s string) (How, error) {
	switch s {
	case "inner":
		return Inner, nil
	case "left":
		return Left, nil
	case "right":
		return Right, nil
	case "outer", "full":
		return Outer, nil
	case "semi", "left_semi":
		return Semi, nil
	case "anti", "left_anti":
		return Anti, nil
	}
	return 0, fmt.Errorf("unknown join kind %q (want inner, left, right, outer, semi or anti)", s)
}

// Keys is one side's key columns; row i's key is (Keys[0][i], Keys[1][i], ...).
type Keys [][]int64

// Len returns the number of rows.
func (k Keys) Len() int {
	if len(k) == 0 {
		return 0
	}
	return len(k[0])
}

func (k Keys) check() error {
	if len(k) == 0 {
		return errors.New("no key columns")
	}
	for i, c := range k {
		if len(c) != len(k[0]) {
			return fmt.Errorf("key column %d has %d rows, column 0 has %d", i, len(c), len(k[0]))
		}
	}
	return nil
}

func mix(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}

// hashRow is the hash of row i's key.
func (k Keys) hashRow(i int) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, c := range k {
		h = mix(h ^ uint64(c[i]))
	}
	return h
}

func (k Keys) hashes() []uint64 {
	out := make([]uint64, k.Len())
	if len(k) == 1 {
		for i, x := range k[0] {
			out[i] = mix(0x9e3779b97f4a7c15 ^ uint64(x))
		}
		return out
	}
	for i := range out {
		out[i] = k.hashRow(i)
	}
	return out
}

func eqRows(a Keys, i int, b Keys, j int) bool {
	for c := range a {
		if a[c][i] != b[c][j] {
			return false
		}
	}
	return true
}

// Partition returns a partition in [0, n) for every row by its key's hash: equal keys get the
// same partition, on every side and every call.
func Partition(k Keys, n int) ([]int32, error) {
	if err := k.check(); err != nil {
		return nil, fmt.Errorf("hashjoin.Partition: %w", err)
	}
	if n < 1 {
		return nil, fmt.Errorf("hashjoin.Partition: %d partitions", n)
	}
	hs := k.hashes()
	out := make([]int32, len(hs))
	for i, h := range hs {
		hi, _ := bits.Mul64(h>>1|h<<63, uint64(n))
		out[i] = int32(hi)
	}
	return out, nil
}

// slot is one entry of the table: the first row of a key (-1 for empty) and the high bits of
// its hash, side by side so that a probe touches one cache line.
type slot struct {
	key  int64 // the key itself when the table has one key column
	row  int32
	hash uint32
}

// Table is a hash table over one side's keys: the rows of every distinct key, in row order.
type Table struct {
	keys Keys
	// dense, for one key column whose values span at most a few times the rows: the first
	// row of key lo+i at dense[i] (-1 for none), a lookup without probing.
	dense []int32
	lo    int64
	mask  uint64
	slots []slot
	next  []int32 // next row of the same key, -1 at the end
	tail  []int32 // last row of the key in the slot (while building)
}

// Build returns the hash table of keys (the smaller side's).
func Build(keys Keys) (*Table, error) {
	if err := keys.check(); err != nil {
		return nil, fmt.Errorf("hashjoin.Build: %w", err)
	}
	n := keys.Len()
	t := &Table{keys: keys, next: make([]int32, n)}
	if len(keys) == 1 && t.buildDense(keys[0]) {
		return t, nil
	}
	size := 16
	for size < 2*n {
		size <<= 1
	}
	t.mask, t.slots, t.tail = uint64(size-1), make([]slot, size), make([]int32, size)
	for i := range t.slots {
		t.slots[i].row = -1
	}
	if len(keys) == 1 {
		t.build1(keys[0])
		t.tail = nil
		return t, nil
	}
	hs := keys.hashes()
	for i := 0; i < n; i++ {
		t.next[i] = -1
		h := hs[i]
		s := h & t.mask
		for {
			r := t.slots[s].row
			if r < 0 {
				t.slots[s], t.tail[s] = slot{row: int32(i), hash: uint32(h >> 32)}, int32(i)
				break
			}
			if t.slots[s].hash == uint32(h>>32) && eqRows(keys, int(r), keys, i) {
				t.next[t.tail[s]] = int32(i)
				t.tail[s] = int32(i)
				break
			}
			s = (s + 1) & t.mask
		}
	}
	t.tail = nil
	return t, nil
}

// build1 fills the table of one key column: the key sits in its slot, so a probe compares
// it there instead of fetching the build row's key from another cache line.
func (t *Table) build1(k []int64) {
	slots, next, tail, mask := t.slots, t.next, t.tail, t.mask
	for i, x := range k {
		next[i] = -1
		s := hash1(x) & mask
		for {
			sl := &slots[s]
			if sl.row < 0 {
				sl.key, sl.row, tail[s] = x, int32(i), int32(i)
				break
			}
			if sl.key == x {
				next[tail[s]] = int32(i)
				tail[s] = int32(i)
				break
			}
			s = (s + 1) & mask
		}
	}
}

// buildDense fills a direct-address table when k's values span at most 4n+1024 (as the
// dense integer ids of most join keys, and dictionary codes, do); it reports whether it did.
func (t *Table) buildDense(k []int64) bool {
	if len(k) == 0 {
		return false
	}
	lo, hi := k[0], k[0]
	for _, x := range k {
		lo, hi = min(lo, x), max(hi, x)
	}
	span := uint64(hi - lo)
	if hi-lo < 0 || span >= uint64(4*len(k)+1024) {
		return false
	}
	dense := make([]int32, span+1)
	for i := range dense {
		dense[i] = -1
	}
	tail := make([]int32, span+1)
	next := t.next
	for i, x := range k {
		next[i] = -1
		d := x - lo
		if dense[d] < 0 {
			dense[d] = int32(i)
		} else {
			next[tail[d]] = int32(i)
		}
		tail[d] = int32(i)
	}
	t.dense, t.lo = dense, lo
	return true
}

func hash1(x int64) uint64 { return mix(0x9e3779b97f4a7c15 ^ uint64(x)) }

// first1 is first for a table of one key column.
func (t *Table) first1(x int64) int32 {
	if t.dense != nil {
		if d := uint64(x - t.lo); d < uint64(len(t.dense)) && x >= t.lo {
			return t.dense[d]
		}
		return -1
	}
	s := hash1(x) & t.mask
	for {
		sl := &t.slots[s]
		if sl.row < 0 || sl.key == x {
			return sl.row
		}
		s = (s + 1) & t.mask
	}
}

// first returns the first build row whose key equals row j of probe, or -1.
func (t *Table) first(probe Keys, j int, h uint64) int32 {
	s := h & t.mask
	for {
		r := t.slots[s].row
		if r < 0 {
			return -1
		}
		if t.slots[s].hash == uint32(h>>32) && eqRows(t.keys, int(r), probe, j) {
			return r
		}
		s = (s + 1) & t.mask
	}
}

// Probe joins the rows of probe against the table: for each probe row in order, the build rows
// of its key in order (pi, bi). With outer, a probe row without a match gives (j, -1). It also
// returns which build rows matched.
func (t *Table) Probe(probe Keys, outer bool) (pi, bi []int32, matched []bool, err error) {
	if err := probe.check(); err != nil {
		return nil, nil, nil, fmt.Errorf("hashjoin.Probe: %w", err)
	}
	if len(probe) != len(t.keys) {
		return nil, nil, nil, fmt.Errorf("hashjoin.Probe: %d key columns against a table of %d", len(probe), len(t.keys))
	}
	n := probe.Len()
	pi, bi = make([]int32, 0, n), make([]int32, 0, n)
	matched = make([]bool, t.keys.Len())
	if len(probe) == 1 {
		for j, x := range probe[0] {
			r := t.first1(x)
			if r < 0 {
				if outer {
					pi, bi = append(pi, int32(j)), append(bi, -1)
				}
				continue
			}
			for ; r >= 0; r = t.next[r] {
				pi, bi = append(pi, int32(j)), append(bi, r)
				matched[r] = true
			}
		}
		return pi, bi, matched, nil
	}
	hs := probe.hashes()
	for j := 0; j < n; j++ {
		r := t.first(probe, j, hs[j])
		if r < 0 {
			if outer {
				pi, bi = append(pi, int32(j)), append(bi, -1)
			}
			continue
		}
		for ; r >= 0; r = t.next[r] {
			pi, bi = append(pi, int32(j)), append(bi, r)
			matched[r] = true
		}
	}
	return pi, bi, matched, nil
}

// Contains reports for every row of probe whether its key is in the table.
func (t *Table) Contains(probe Keys) ([]bool, error) {
	if err := probe.check(); err != nil {
		return nil, fmt.Errorf("hashjoin.Contains: %w", err)
	}
	if len(probe) != len(t.keys) {
		return nil, fmt.Errorf("hashjoin.Contains: %d key columns against a table of %d", len(probe), len(t.keys))
	}
	out := make([]bool, probe.Len())
	if len(probe) == 1 && len(t.keys) == 1 {
		for j, x := range probe[0] {
			out[j] = t.first1(x) >= 0
		}
		return out, nil
	}
	hs := probe.hashes()
	for j := range out {
		out[j] = t.first(probe, j, hs[j]) >= 0
	}
	return out, nil
}

// byFirst reorders pairs (a, b) so that a ascends, keeping the order of equal a (a counting
// sort; a is in [0, n)). Pairs with a == -1 go last in their order.
func byFirst(a, b []int32, n int) ([]int32, []int32) {
	count := make([]int32, n+1)
	for _, x := range a {
		count[x+1]++
	}
	// Rows with a == -1 are counted at 0; move them to the end.
	nulls := count[0]
	count[0] = 0
	for i := 1; i <= n; i++ {
		count[i] += count[i-1]
	}
	oa, ob := make([]int32, len(a)), make([]int32, len(a))
	end := int32(len(a)) - nulls
	for k, x := range a {
		var at int32
		if x < 0 {
			at = end
			end++
		} else {
			at = count[x]
			count[x]++
		}
		oa[at], ob[at] = x, b[k]
	}
	return oa, ob
}

// Join returns the row pairs of joining left and right on their keys with how (see the package
// documentation for their order). It builds on the smaller side.
func Join(left, right Keys, how How) (li, ri []int32, err error) {
	if err := left.check(); err != nil {
		return nil, nil, fmt.Errorf("hashjoin.Join: left: %w", err)
	}
	if err := right.check(); err != nil {
		return nil, nil, fmt.Errorf("hashjoin.Join: right: %w", err)
	}
	if len(left) != len(right) {
		return nil, nil, fmt.Errorf("hashjoin.Join: %d left key columns, %d right", len(left), len(right))
	}
	nl, nr := left.Len(), right.Len()
	switch how {
	case Semi, Anti:
		t, err := Build(right)
		if err != nil {
			return nil, nil, err
		}
		in, err := t.Contains(left)
		if err != nil {
			return nil, nil, err
		}
		for i, ok := range in {
			if ok == (how == Semi) {
				li = append(li, int32(i))
			}
		}
		return li, nil, nil
	case Inner, Left, Right, Outer:
	default:
		return nil, nil, fmt.Errorf("hashjoin.Join: %v", how)
	}
	// Orient so that "a" is the side whose order leads the output.
	a, b, na, nb := left, right, nl, nr
	if how == Right {
		a, b, na, nb = right, left, nr, nl
	}
	keepA := how != Inner
	var pa, pb []int32
	var matchedB []bool
	if nb <= na {
		t, err := Build(b)
		if err != nil {
			return nil, nil, err
		}
		if pa, pb, matchedB, err = t.Probe(a, keepA); err != nil {
			return nil, nil, err
		}
	} else {
		t, err := Build(a)
		if err != nil {
			return nil, nil, err
		}
		var matchedA []bool
		if pb, pa, matchedA, err = t.Probe(b, how == Outer); err != nil {
			return nil, nil, err
		}
		if how == Outer {
			matchedB = make([]bool, nb)
			for k, x := range pa {
				if x >= 0 {
					matchedB[pb[k]] = true
				}
			}
			// the unmatched b rows are re-added below; drop them here
			w := 0
			for k := range pa {
				if pa[k] >= 0 {
					pa[w], pb[w] = pa[k], pb[k]
					w++
				}
			}
			pa, pb = pa[:w], pb[:w]
		}
		if keepA {
			for i, m := range matchedA {
				if !m {
					pa, pb = append(pa, int32(i)), append(pb, -1)
				}
			}
		}
		pa, pb = byFirst(pa, pb, na)
	}
	if how == Outer {
		for j, m := range matchedB {
			if !m {
				pa, pb = append(pa, -1), append(pb, int32(j))
			}
		}
	}
	if how == Right {
		return pb, pa, nil
	}
	return pa, pb, nil
}

// First returns, for every row of probe, the first build row of its key, or -1.
func (t *Table) First(probe Keys) ([]int32, error) {
	if err := probe.check(); err != nil {
		return nil, fmt.Errorf("hashjoin.First: %w", err)
	}
	if len(probe) != len(t.keys) {
		return nil, fmt.Errorf("hashjoin.First: %d key columns against a table of %d", len(probe), len(t.keys))
	}
	out := make([]int32, probe.Len())
	if len(probe) == 1 {
		for j, x := range probe[0] {
			out[j] = t.first1(x)
		}
		return out, nil
	}
	hs := probe.hashes()
	for j := range out {
		out[j] = t.first(probe, j, hs[j])
	}
	return out, nil
}
