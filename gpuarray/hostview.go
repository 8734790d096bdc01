package gpuarray

import (
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/expr"
	"github.com/gpunotes/gpunotes/internal/hostview"
)

func init() { hostview.Register(valuesInPlace, intRange) }

// valuesInPlace returns a computed array's values when they are a KData node's Go memory on
// the host that the garbage collector owns, or an array persisted on the host (hostChunks: its
// assembled row-major copy, made on the first read as Values does, then kept), for
// internal/hostview: not for values held on a device
// nor host copies in memory mapped for them (dtype.KeepAlive: freed with their owner, which the
// caller's typed slices would not keep), nor for lazy arrays.
func valuesInPlace(x any) (dtype.Slice, bool) {
	a, ok := x.(*Array)
	if !ok || a == nil || a.err != nil || a.n == nil {
		return dtype.Slice{}, false
	}
	n := a.n
	if n.Kind != expr.KData {
		return dtype.Slice{}, false
	}
	v := n.Data
	if n.Buf != nil {
		h, ok := n.Buf.(*hostChunks)
		if !ok {
			return dtype.Slice{}, false
		}
		// Persisted in host memory: the row-major array its Values assembles once and keeps.
		var err error
		if v, err = h.Values(); err != nil {
			return dtype.Slice{}, false
		}
	}
	if !v.Owned() || v.DType() != n.DType || int64(v.Len()) != expr.Size(n.Shape) {
		return dtype.Slice{}, false
	}
	return v, true
}

// intRange returns the smallest and largest value of an int32 or int64 array persisted on the
// host, kept with its chunks after the first call (internal/hostview).
func intRange(x any) (lo, hi int64, ok bool) {
	a, isArr := x.(*Array)
	if !isArr || a == nil || a.err != nil || a.n == nil || a.n.Kind != expr.KData {
		return 0, 0, false
	}
	h, isHost := a.n.Buf.(*hostChunks)
	if !isHost {
		return 0, 0, false
	}
	return h.intRange()
}
