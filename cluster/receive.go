package cluster

import (
	"time"
)

// recvWait bounds one wait of a shard being received for room in its worker's memory: past
// it the shard reads on over the limit rather than stall its sender into a timeout (the
// sender's writes time out after dataIOTimeout).
const recvWait = dataIOTimeout / 4

// receive is one shard being read from a peer (serveShards): its buffers count with the
// store's buffers in flight (held) from the moment they are allocated, before the shard
// reaches the store, until it is stored (putReceived) or given up (end). A nil receive counts
// nothing (a sink without a store).
type receive struct {
	st     *store
	ticket uint64 // order of the first byte among the receives in flight; 0 before it
	n      uint64
}

// beginReceive starts counting a shard's receive buffers.
func (st *store) beginReceive() *receive {
	return &receive{st: st}
}

// grow counts n more bytes of r's buffers against the host limit before they are allocated.
// Results spill to make room as for reserve. While the store is still over its limit and an
// older receive is in flight, it waits (at most recvWait) for buffers or results to leave
// memory: receives arriving together do not pass the limit together, and the oldest always
// proceeds, so receives never wait on each other in a circle.
func (r *receive) grow(n uint64) {
	if r == nil || n == 0 {
		return
	}
	st := r.st
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	st.mu.Lock()
	defer st.mu.Unlock()
	if r.ticket == 0 {
		st.nextTicket++
		r.ticket = st.nextTicket
		st.recv[r.ticket] = r
	}
	for st.hostLimit > 0 && !st.oldestReceiveLocked(r) {
		st.held += n
		st.spillLocked()
		st.held -= n
		if st.inMem+st.held+n <= st.hostLimit {
			break
		}
		if timer == nil {
			timer = time.NewTimer(st.recvWait)
		}
		st.recvWaits++
		if st.onRecvWait != nil {
			st.onRecvWait()
		}
		room := st.room
		st.mu.Unlock()
		expired := false
		select {
		case <-room:
		case <-timer.C:
			expired = true
		}
		st.mu.Lock()
		if expired {
			st.logf("a shuffle receive waited %v for room in memory: reading on past the limit", st.recvWait)
			break
		}
	}
	r.n += n
	st.held += n
	st.spillLocked() // before the peak: the buffer is allocated once room is made
	st.notePeakLocked()
}

// oldestReceiveLocked reports whether r is the oldest receive in flight.
func (st *store) oldestReceiveLocked(r *receive) bool {
	for t := range st.recv {
		if t < r.ticket {
			return false
		}
	}
	return true
}

// end gives r's buffers back: the shard was not stored.
func (r *receive) end() {
	if r == nil {
		return
	}
	r.st.mu.Lock()
	defer r.st.mu.Unlock()
	r.settleLocked()
}

func (r *receive) settleLocked() {
	st := r.st
	st.held -= min(r.n, st.held)
	r.n = 0
	delete(st.recv, r.ticket)
	st.wakeLocked()
}

// putReceived keeps the pieces of a shard r received, in host memory, its buffers becoming
// the results at once (never counted twice), then spills what no longer fits.
func (st *store) putReceived(r *receive, keys []string, bs []*blob) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if r != nil {
		r.settleLocked()
	}
	for i, k := range keys {
		st.dropLocked(k)
		st.items[k] = &stored{b: bs[i], size: uint64(len(bs[i].Data)), touched: st.tick()}
		st.inMem += uint64(len(bs[i].Data))
		st.moved[k] = tierHost
	}
	st.notePeakLocked()
	st.spillLocked()
}

// wakeLocked wakes the receives waiting for room.
func (st *store) wakeLocked() {
	if st.room == nil {
		return
	}
	close(st.room)
	st.room = make(chan struct{})
}
