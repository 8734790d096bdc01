package hashagg

import (
	"errors"
	"fmt"
	"math/bits"
)

// Key is one key column of a partition as int64 codes; Valid, when not nil, marks the rows
// whose key is not null.
type Key struct {
	Values []int64
	Valid  []bool
}

// Groups is the grouping of one partition's rows.
type Groups struct {
	// IDs is the group of each row, -1 for a row with a null key.
	IDs []int32
	// N is the number of groups.
	N int
	// Keys holds, per key column, the key of each group (len N).
	Keys [][]int64
}

func mix(x uint64) uint64 {
	x ^= x >> 33
	x *= 0xff51afd7ed558ccd
	x ^= x >> 33
	x *= 0xc4ceb9fe1a85ec53
	x ^= x >> 33
	return x
}

func hashRow(keys [][]int64, i int) uint64 {
	h := uint64(0x9e3779b97f4a7c15)
	for _, k := range keys {
		h = mix(h ^ uint64(k[i]))
	}
	return h
}

// table is an open-addressing (linear probing) hash table from keys to group IDs.
type table struct {
	slots []int32 // group ID + 1; 0 is empty
	mask  uint64
	keys  [][]int64
	hash  []uint64
}

func newTable(nkeys, hint int) *table {
	c := 16
	for c < 2*hint {
		c <<= 1
	}
	if hint > 1<<20 {
		c = 1 << 21 // grow as groups appear rather than reserving for every row
	}
	t := &table{slots: make([]int32, c), mask: uint64(c - 1), keys: make([][]int64, nkeys)}
	return t
}

func (t *table) grow() {
	c := len(t.slots) * 2
	t.slots = make([]int32, c)
	t.mask = uint64(c - 1)
	for g, h := range t.hash {
		s := h & t.mask
		for t.slots[s] != 0 {
			s = (s + 1) & t.mask
		}
		t.slots[s] = int32(g + 1)
	}
}

// find returns the group of row i of cols (hash h), adding it when new.
func (t *table) find(cols [][]int64, i int, h uint64) int32 {
	s := h & t.mask
	for {
		g := t.slots[s]
		if g == 0 {
			break
		}
		g--
		if t.hash[g] == h && t.equal(cols, i, g) {
			return g
		}
		s = (s + 1) & t.mask
	}
	g := int32(len(t.hash))
	t.hash = append(t.hash, h)
	for k := range cols {
		t.keys[k] = append(t.keys[k], cols[k][i])
	}
	t.slots[s] = g + 1
	if uint64(len(t.hash))*2 > uint64(len(t.slots)) {
		t.grow()
	}
	return g
}

func (t *table) equal(cols [][]int64, i int, g int32) bool {
	for k, c := range cols {
		if t.keys[k][g] != c[i] {
			return false
		}
	}
	return true
}

// find1 is find for one key column.
func (t *table) find1(v int64) int32 {
	h := mix(uint64(v) ^ 0x9e3779b97f4a7c15)
	s := h & t.mask
	k0 := t.keys[0]
	for {
		g := t.slots[s]
		if g == 0 {
			break
		}
		if k0[g-1] == v {
			return g - 1
		}
		s = (s + 1) & t.mask
	}
	g := int32(len(t.hash))
	t.hash = append(t.hash, h)
	t.keys[0] = append(t.keys[0], v)
	t.slots[s] = g + 1
	if uint64(len(t.hash))*2 > uint64(len(t.slots)) {
		t.grow()
	}
	return g
}

// Group groups the rows of keys (all of one length) by their values.
func Group(keys []Key) (*Groups, error) {
	if len(keys) == 0 {
		return nil, errors.New("hashagg.Group: no key columns")
	}
	n := len(keys[0].Values)
	cols := make([][]int64, len(keys))
	for k, key := range keys {
		if len(key.Values) != n {
			return nil, fmt.Errorf("hashagg.Group: key %d has %d rows, key 0 has %d", k, len(key.Values), n)
		}
		if key.Valid != nil && len(key.Valid) != n {
			return nil, fmt.Errorf("hashagg.Group: key %d has %d validity entries for %d rows", k, len(key.Valid), n)
		}
		cols[k] = key.Values
	}
	if n > 1<<31-1 {
		return nil, fmt.Errorf("hashagg.Group: %d rows in one partition, at most %d", n, 1<<31-1)
	}
	ids := make([]int32, n)
	t := newTable(len(keys), n)
	for i := 0; i < n; i++ {
		null := false
		for _, key := range keys {
			if key.Valid != nil && !key.Valid[i] {
				null = true
				break
			}
		}
		if null {
			ids[i] = -1
			continue
		}
		if len(cols) == 1 {
			ids[i] = t.find1(cols[0][i])
		} else {
			ids[i] = t.find(cols, i, hashRow(cols, i))
		}
	}
	return &Groups{IDs: ids, N: len(t.hash), Keys: t.keys}, nil
}

// bucketOf is the SplitOut bucket of a key row.
func bucketOf(keys [][]int64, i, n int) int {
	h := hashRow(keys, i)
	hi, _ := bits.Mul64(mix(h), uint64(n))
	return int(hi)
}
