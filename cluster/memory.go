package cluster

import (
	"encoding/binary"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// memTuner fits a worker's memory to its limit: the limit covers the whole process, but the
// Go runtime's own limit (debug.SetMemoryLimit) covers only the memory the runtime manages,
// not the binary's resident code and data nor C libraries' memory. The tuner measures that
// resident rest (its largest value so far), gives the runtime the limit net of it, and the
// store its share of the net (storeShare), the rest being room for the tasks' buffers and
// the collector's garbage.
type memTuner struct {
	mu    sync.Mutex
	limit uint64
	rest  uint64
}

// storeShare is the part of a worker's memory, net of its resident code, that its store
// keeps results in before spilling them.
const storeShare = 0.5

// headroom: 1/headroom of the limit is left out of the runtime's.
const headroom = 16

// goResident returns the memory the Go runtime has mapped and not given back to the system.
func goResident() uint64 {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 || s[1].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64() - s[1].Value.Uint64()
}

// limited reports whether the tuner fits the worker to a memory limit.
func (m *memTuner) limited() bool {
	return m != nil && m.limit != 0 && m.limit < math.MaxInt64 && os.Getenv("GOMEMLIMIT") == ""
}

// tune measures the process's memory outside the runtime and sets the runtime's limit and
// the store's; it does nothing without a limit or when GOMEMLIMIT chose the runtime's.
func (m *memTuner) tune(st *store) {
	if !m.limited() {
		return
	}
	r, g := rss(), goResident()
	m.mu.Lock()
	defer m.mu.Unlock()
	rest := m.rest
	if r > g {
		rest = max(rest, r-g)
	}
	rest = min(rest, m.limit/2) // a measure gone wrong leaves half the limit to the runtime
	if rest == m.rest && m.rest != 0 {
		return
	}
	m.rest = rest
	// The headroom covers the rest's growth between two measures (code paths run later).
	net := m.limit - rest - m.limit/headroom
	debug.SetMemoryLimit(int64(net))
	if st != nil {
		st.setHostLimit(uint64(float64(net) * storeShare))
	}
}

// dropImagePages takes the executable's read-only pages (code, constants, the function
// tables) out of this process's resident memory: the page cache keeps them, and those the
// worker touches again come back from it at a minor fault. Start-up touches nearly all of
// them (a large binary; recent kernels map whole folios of the file at a fault), about 60
// MiB that count in the worker's resident memory. Only pages that hold the file's contents
// are dropped: a read-only page the dynamic loader wrote (relocations it then protected,
// RELRO) is anonymous memory, which would come back as the file's unrelocated bytes, so each
// page is checked in /proc/self/pagemap first; without it only the code is dropped. It
// returns the bytes it advised away.
func dropImagePages() uint64 {
	exe, err := os.Executable()
	if err != nil {
		return 0
	}
	maps, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		return 0
	}
	pm, err := os.Open("/proc/self/pagemap")
	if err == nil {
		defer pm.Close()
	}
	page := uint64(os.Getpagesize())
	var dropped uint64
	advise := func(lo, hi uint64) {
		if hi <= lo {
			return
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(lo), uintptr(hi-lo), syscall.MADV_DONTNEED); errno == 0 {
			dropped += hi - lo
		}
	}
	for _, line := range strings.Split(string(maps), "\n") {
		f := strings.Fields(line)
		if len(f) < 6 || f[5] != exe || len(f[1]) < 4 || f[1][0] != 'r' || f[1][1] != '-' || f[1][3] != 'p' {
			continue // not a private, read-only mapping of the executable
		}
		lo, hi, ok := strings.Cut(f[0], "-")
		if !ok {
			continue
		}
		a, err1 := strconv.ParseUint(lo, 16, 64)
		b, err2 := strconv.ParseUint(hi, 16, 64)
		if err1 != nil || err2 != nil || b <= a || a%page != 0 || b%page != 0 {
			continue
		}
		if pm == nil {
			if f[1][2] == 'x' {
				advise(a, b) // code: never written
			}
			continue
		}
		// Per page, 64 bits: bit 63 present, bit 61 a file page (or shared anonymous).
		entries := make([]byte, 8*((b-a)/page))
		if n, err := pm.ReadAt(entries, int64(a/page*8)); err != nil || n != len(entries) {
			continue
		}
		run := a
		for i := uint64(0); i < (b-a)/page; i++ {
			e := binary.LittleEndian.Uint64(entries[8*i:])
			if e&(1<<63) != 0 && e&(1<<61) == 0 { // present and anonymous: keep it
				advise(run, a+i*page)
				run = a + (i+1)*page
			}
		}
		advise(run, b)
	}
	return dropped
}
