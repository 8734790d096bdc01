package cluster

import "testing"

// TestStoreReserveSpillsResults checks that buffers in flight count against the host limit:
// reserving room spills the least recently used results, and the peak counts both.
func TestStoreReserveSpillsResults(t *testing.T) {
	st := newStore(0, 100, t.TempDir())
	defer st.close()
	st.putBlob("a", &blob{Data: make([]byte, 60)})
	st.putBlob("b", &blob{Data: make([]byte, 30)})
	st.reserve(50)
	if s := st.stats(); s.Host != 30 || s.Disk != 60 || s.Peak != 140 {
		t.Fatalf("after reserving 50 bytes beside 90 held (limit 100): %+v, want a spilled and a peak of 140", s)
	}
	st.unreserve(50)
	st.putBlob("c", &blob{Data: make([]byte, 60)})
	if s := st.stats(); s.Host != 90 || s.Disk != 60 {
		t.Fatalf("after the buffers left: %+v, want b and c in memory", s)
	}
}
