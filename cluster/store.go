package cluster

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// devValue is a task result held in a GPU's memory: a GPU worker's persisted chunk, which the
// worker's kernels read in place (array.go's devChunk).
type devValue interface {
	// Bytes is the device memory it holds.
	Bytes() uint64
	// Host copies it to host memory: the value a host-held result of the task would be.
	Host() (any, error)
	// Free gives its device memory back.
	Free()
}

// stored is one result in a worker's store, in exactly one tier: the device (dev), host
// memory (b) or disk (path).
type stored struct {
	dev     devValue
	b       *blob
	path    string
	size    uint64 // bytes in its tier: device bytes, or the encoded length
	touched uint64 // the store's clock at its last use: the least recently used spill first
	pins    int    // tasks reading it in place: it stays in its tier
}

// Tier names, for stats and tests.
const (
	tierDevice = "device"
	tierHost   = "host"
	tierDisk   = "disk"
)

func (s *stored) tier() string {
	switch {
	case s.dev != nil:
		return tierDevice
	case s.b != nil:
		return tierHost
	}
	return tierDisk
}

// store holds a worker's task results in three tiers: a GPU's memory (results a GPU worker
// keeps there, read in place by its kernels), host memory (encoded for the wire) and disk.
// Under pressure the least recently used results move down a tier: device results beyond
// devLimit to host memory, host results beyond hostLimit to disk (0: no limit). A result a
// GPU task reads comes back to the device when upload takes it.
type store struct {
	mu        sync.Mutex
	items     map[string]*stored
	devLimit  uint64
	hostLimit uint64
	dir       string
	// upload puts a host value on the device for a GPU task that reads it; nil, or a nil
	// devValue, leaves it where it is (a CPU worker; a value that is not an array chunk).
	upload func(v any) (devValue, error)
	// logf reports spills that failed (the result stays where it was).
	logf func(format string, args ...any)

	onDev, inMem, spilled uint64
	// held is the bytes of task buffers in flight (reserve) that count with inMem against
	// hostLimit; peak the most that inMem and held came to at once.
	held, peak uint64
	clock      uint64
	// recv is the shards being received from peers (receive.go), by ticket; room is closed
	// (and replaced) when bytes leave memory, for receives waiting for room.
	recv       map[uint64]*receive
	nextTicket uint64
	room       chan struct{}
	recvWaits  int
	// recvWait bounds a receive's wait for room (recvWait; tests lengthen it), and
	// onRecvWait, when set, is called as a receive starts waiting (tests).
	recvWait   time.Duration
	onRecvWait func()
	// moved records the tier each result entered since the last takeMoves, for the
	// scheduler (the array repr says where persisted chunks are).
	moved map[string]string
}

func newStore(devLimit, hostLimit uint64, dir string) *store {
	return &store{items: map[string]*stored{}, devLimit: devLimit, hostLimit: hostLimit, dir: dir,
		logf: func(string, ...any) {}, moved: map[string]string{}, recv: map[uint64]*receive{}, room: make(chan struct{}), recvWait: recvWait}
}

// storeStats is what a store holds, per tier.
type storeStats struct {
	Device, Host, Disk uint64 // bytes
	Count              int
	// Peak is the most host memory the results and the buffers in flight took at once.
	Peak uint64
	// RecvWaits counts the waits of shards being received for room (receive.grow).
	RecvWaits int
}

func (st *store) stats() storeStats {
	st.mu.Lock()
	defer st.mu.Unlock()
	return storeStats{Device: st.onDev, Host: st.inMem, Disk: st.spilled, Count: len(st.items), Peak: st.peak, RecvWaits: st.recvWaits}
}

// reserve counts n bytes of a task's buffers (a shuffle's pieces in flight) against the
// host limit until unreserve: results spill to make room for them.
func (st *store) reserve(n uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.held += n
	st.notePeakLocked()
	st.spillLocked()
}

func (st *store) unreserve(n uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.held -= min(n, st.held)
	st.wakeLocked()
}

func (st *store) notePeakLocked() {
	st.peak = max(st.peak, st.inMem+st.held)
}

// setHostLimit changes the host memory the store keeps results in, spilling beyond it.
func (st *store) setHostLimit(n uint64) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.hostLimit = n
	st.spillLocked()
	st.wakeLocked()
}

// takeMoves returns the tier each result entered since the last call (the latest move of each).
func (st *store) takeMoves() map[string]string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if len(st.moved) == 0 {
		return nil
	}
	m := st.moved
	st.moved = map[string]string{}
	return m
}

func (st *store) tick() uint64 {
	st.clock++
	return st.clock
}

// hostBytes is the bytes of results the store holds in host memory.
func (st *store) hostBytes() uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.inMem
}

// putDev keeps a device-held result, then spills what no longer fits.
func (st *store) putDev(k string, v devValue) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.dropLocked(k)
	st.items[k] = &stored{dev: v, size: v.Bytes(), touched: st.tick()}
	st.onDev += v.Bytes()
	st.moved[k] = tierDevice
	st.spillLocked()
}

// putBlob keeps an encoded result in host memory, then spills what no longer fits.
func (st *store) putBlob(k string, b *blob) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.dropLocked(k)
	st.items[k] = &stored{b: b, size: uint64(len(b.Data)), touched: st.tick()}
	st.inMem += uint64(len(b.Data))
	st.moved[k] = tierHost
	st.notePeakLocked() // before the spill: the spilled results are in memory until then
	st.spillLocked()
}

func (st *store) has(k string) bool {
	st.mu.Lock()
	defer st.mu.Unlock()
	return st.items[k] != nil
}

// where returns the tier holding k ("" when the store lacks it).
func (st *store) where(k string) string {
	st.mu.Lock()
	defer st.mu.Unlock()
	if s := st.items[k]; s != nil {
		return s.tier()
	}
	return ""
}

func (st *store) drop(k string) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.dropLocked(k)
}

// dropLocked forgets k, freeing its memory or file. A pinned device result is freed by the
// last unpin instead.
func (st *store) dropLocked(k string) {
	s := st.items[k]
	if s == nil {
		return
	}
	delete(st.items, k)
	delete(st.moved, k)
	st.leaveTier(s)
	st.wakeLocked()
	if s.dev != nil && s.pins == 0 {
		s.dev.Free()
	}
	if s.path != "" {
		_ = os.Remove(s.path)
	}
}

// leaveTier takes s's bytes off its tier's total.
func (st *store) leaveTier(s *stored) {
	switch s.tier() {
	case tierDevice:
		st.onDev -= s.size
	case tierHost:
		st.inMem -= s.size
	default:
		st.spilled -= s.size
	}
}

// blob returns k encoded for the wire (a peer's fetch, the client's Result), copying a device
// result to the host without moving it.
func (st *store) blob(k string) (*blob, error) {
	st.mu.Lock()
	s := st.items[k]
	if s == nil {
		st.mu.Unlock()
		return nil, fmt.Errorf("no result %s on this worker", k)
	}
	s.touched = st.tick()
	switch {
	case s.b != nil:
		b := s.b
		st.mu.Unlock()
		return b, nil
	case s.dev != nil:
		dv := s.dev
		s.pins++
		st.mu.Unlock()
		defer st.unpin(k, s)
		v, err := dv.Host()
		if err != nil {
			return nil, fmt.Errorf("copy %s from the GPU: %w", k, err)
		}
		return encodeValue(v)
	}
	path := s.path
	st.mu.Unlock()
	return readSpilled(k, path)
}

// readSpilled reads a spilled result: its encoding byte, then its data into a buffer of its
// own (aligned as allocations are, for a raw chunk's values to be read in place).
func readSpilled(k, path string) (*blob, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read spilled %s: %w", k, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("read spilled %s: %w", k, err)
	}
	if fi.Size() < 1 {
		return nil, fmt.Errorf("read spilled %s: empty file", k)
	}
	var enc [1]byte
	if _, err := io.ReadFull(f, enc[:]); err != nil {
		return nil, fmt.Errorf("read spilled %s: %w", k, err)
	}
	data := make([]byte, fi.Size()-1)
	if _, err := io.ReadFull(f, data); err != nil {
		return nil, fmt.Errorf("read spilled %s: %w", k, err)
	}
	return &blob{Enc: enc[0], Data: data}, nil
}

// writeSpilled writes b to path: its encoding byte, then its data (not copied first).
func writeSpilled(path string, b *blob) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write([]byte{b.Enc}); err != nil {
		_ = f.Close()
		return err
	}
	if _, err := f.Write(b.Data); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// value returns k's value for a task: its devValue, pinned on the device until done is called,
// when it is held there or onGPU and upload takes it back (a result spilled earlier); else
// the decoded host value. A kept chunk read from disk is decoded in place in the buffer read;
// one in host memory is copied.
func (st *store) value(k string, onGPU bool) (v any, done func(), err error) {
	return st.valueFor(k, onGPU, false)
}

// valueFor is value, reading a kept chunk in host memory in place when readOnly.
func (st *store) valueFor(k string, onGPU, readOnly bool) (v any, done func(), err error) {
	nop := func() {}
	st.mu.Lock()
	s := st.items[k]
	if s == nil {
		st.mu.Unlock()
		return nil, nop, fmt.Errorf("no result %s on this worker", k)
	}
	s.touched = st.tick()
	if s.dev != nil {
		s.pins++
		dv := s.dev
		st.mu.Unlock()
		return dv, func() { st.unpin(k, s) }, nil
	}
	b, path := s.b, s.path
	st.mu.Unlock()
	shared := readOnly
	if b == nil {
		if b, err = readSpilled(k, path); err != nil {
			return nil, nop, err
		}
		shared = true
	}
	if v, err = decodeBlob(b, shared); err != nil {
		return nil, nop, err
	}
	if !onGPU || st.upload == nil {
		return v, nop, nil
	}
	dv, err := st.upload(v)
	if err != nil || dv == nil {
		if err != nil {
			st.logf("keep %s on the GPU: %v (read from host memory)", k, err)
		}
		return v, nop, nil
	}
	st.mu.Lock()
	if st.items[k] != s || s.dev != nil { // dropped or moved meanwhile
		st.mu.Unlock()
		dv.Free()
		return v, nop, nil
	}
	st.leaveTier(s)
	if s.path != "" {
		_ = os.Remove(s.path)
	}
	s.dev, s.b, s.path, s.size = dv, nil, "", dv.Bytes()
	st.onDev += s.size
	st.moved[k] = tierDevice
	s.pins++
	st.spillLocked()
	st.mu.Unlock()
	return dv, func() { st.unpin(k, s) }, nil
}

// unpin ends a task's use of s: a result dropped meanwhile is freed now, and one over the
// device limit may spill.
func (st *store) unpin(k string, s *stored) {
	st.mu.Lock()
	defer st.mu.Unlock()
	s.pins--
	if s.pins > 0 {
		return
	}
	if st.items[k] != s {
		if s.dev != nil {
			s.dev.Free()
		}
		return
	}
	st.spillLocked()
}

// makeRoom moves every unpinned device result to host memory (then spills host memory as
// usual): a GPU task ran out of device memory. It returns the device bytes freed.
func (st *store) makeRoom() uint64 {
	st.mu.Lock()
	defer st.mu.Unlock()
	before := st.onDev
	for _, k := range st.lru(tierDevice) {
		if err := st.toHostLocked(k); err != nil {
			st.logf("spill %s from the GPU to host memory: %v", k, err)
			break
		}
	}
	st.spillLocked()
	return before - st.onDev
}

// toHostLocked moves the device result k to host memory.
func (st *store) toHostLocked(k string) error {
	s := st.items[k]
	v, err := s.dev.Host()
	if err != nil {
		return err
	}
	b, err := encodeValue(v)
	if err != nil {
		return err
	}
	st.onDev -= s.size
	s.dev.Free()
	s.dev, s.b, s.size = nil, b, uint64(len(b.Data))
	st.inMem += s.size
	st.moved[k] = tierHost
	return nil
}

// spillLocked moves the least recently used results down a tier while a tier is over its
// limit: device to host memory, then host memory to disk. Pinned results stay.
func (st *store) spillLocked() {
	if st.devLimit > 0 && st.onDev > st.devLimit {
		for _, k := range st.lru(tierDevice) {
			if st.onDev <= st.devLimit {
				break
			}
			if err := st.toHostLocked(k); err != nil {
				st.logf("spill %s from the GPU to host memory: %v", k, err)
				break
			}
		}
	}
	if st.hostLimit == 0 || st.inMem+st.held <= st.hostLimit {
		return
	}
	if err := os.MkdirAll(st.dir, 0o700); err != nil {
		st.logf("spill to disk: %v", err)
		return
	}
	for _, k := range st.lru(tierHost) {
		if st.inMem+st.held <= st.hostLimit {
			break
		}
		s := st.items[k]
		path := filepath.Join(st.dir, sanitize(k)+".bin")
		if err := writeSpilled(path, s.b); err != nil {
			st.logf("spill %s to disk: %v", k, err)
			return
		}
		st.inMem -= s.size
		s.b, s.path = nil, path
		st.spilled += s.size
		st.moved[k] = tierDisk
	}
}

// lru returns the unpinned keys of a tier, least recently used first.
func (st *store) lru(tier string) []string {
	var keys []string
	for k, s := range st.items {
		if s.pins == 0 && s.tier() == tier {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return st.items[keys[i]].touched < st.items[keys[j]].touched })
	return keys
}

// dropPrefix forgets every item whose key starts with prefix (a shuffle run's shards) and
// returns how many it dropped.
func (st *store) dropPrefix(prefix string) int {
	st.mu.Lock()
	defer st.mu.Unlock()
	n := 0
	for k := range st.items {
		if strings.HasPrefix(k, prefix) {
			st.dropLocked(k)
			n++
		}
	}
	return n
}

// close frees every device result (the worker is leaving).
func (st *store) close() {
	st.mu.Lock()
	defer st.mu.Unlock()
	for k := range st.items {
		st.dropLocked(k)
	}
}
