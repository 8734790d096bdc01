package dataframe

import (
	"strings"
	"sync"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// strHeap is a string buffer in Arrow's layout: string i is data[offsets[i]:offsets[i+1]].
// A string column's rows are int64 positions into a heap; a categorical's dictionary is a
// heap of distinct strings. Heaps never change once built.
type strHeap struct {
	offsets []int64
	data    []byte

	once  sync.Once
	codes []int64 // dictionary code of each string (equal strings, equal codes)
	dict  *strHeap

	devMu sync.Mutex
	dev   *gpuarray.DeviceStrings // the heap held on a GPU (strings_gpu.go), nil until then
	// The device's dictionary encoding of dev (strings_gpu.go's deviceStringCodes), kept as
	// encode keeps the host's: each string's code held there, a string of each code.
	devCodes *gpuarray.Array
	devFirst []int64
	devOf    *gpuarray.DeviceStrings
}

func newHeap(n int) *strHeap { return &strHeap{offsets: make([]int64, 1, n+1)} }

func heapOf(ss []string) *strHeap {
	h := newHeap(len(ss))
	n := 0
	for _, s := range ss {
		n += len(s)
	}
	h.data = make([]byte, 0, n)
	for _, s := range ss {
		h.add(s)
	}
	return h
}

func (h *strHeap) add(s string) {
	h.data = append(h.data, s...)
	h.offsets = append(h.offsets, int64(len(h.data)))
}

func (h *strHeap) len() int { return len(h.offsets) - 1 }

func (h *strHeap) at(i int64) string { return string(h.data[h.offsets[i]:h.offsets[i+1]]) }

func (h *strHeap) bytesAt(i int64) []byte { return h.data[h.offsets[i]:h.offsets[i+1]] }

// encode returns the dictionary code of every string of h and the dictionary (distinct
// strings in order of first appearance), computed once.
func (h *strHeap) encode() ([]int64, *strHeap) {
	h.once.Do(func() {
		seen := make(map[string]int64)
		h.codes = make([]int64, h.len())
		h.dict = newHeap(0)
		for i := range h.codes {
			b := h.bytesAt(int64(i))
			c, ok := seen[string(b)]
			if !ok {
				c = int64(len(seen))
				seen[string(b)] = c
				h.dict.add(string(b))
			}
			h.codes[i] = c
		}
		h.dict.codes = make([]int64, h.dict.len())
		for i := range h.dict.codes {
			h.dict.codes[i] = int64(i)
		}
		h.dict.dict = h.dict
		h.dict.once.Do(func() {})
	})
	return h.codes, h.dict
}

// mapStrings returns the heap of f applied to every string of h.
func (h *strHeap) mapStrings(f func(string) string) *strHeap {
	out := newHeap(h.len())
	for i := 0; i < h.len(); i++ {
		out.add(f(h.at(int64(i))))
	}
	return out
}

// strFuncs are the string functions of Expr, per string.
func splitPart(s, sep string, i int) (string, bool) {
	parts := strings.Split(s, sep)
	if i < 0 {
		i += len(parts)
	}
	if i < 0 || i >= len(parts) {
		return "", false
	}
	return parts[i], true
}

// sliceRunes is Python's s[start:stop] over code points (stop <= 0 counts from the end;
// stop == 0 with hasStop false means to the end).
func sliceRunes(s string, start, stop int, hasStop bool) string {
	r := []rune(s)
	n := len(r)
	norm := func(i int) int {
		if i < 0 {
			i += n
		}
		return min(max(i, 0), n)
	}
	lo, hi := norm(start), n
	if hasStop {
		hi = norm(stop)
	}
	if lo >= hi {
		return ""
	}
	return string(r[lo:hi])
}
