package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/gpuarray/plan"
)

// encChunk marks a kept chunk (one plan.Output without partials) encoded raw: a header, then
// its values as they are in memory, 16-byte aligned in Data. Gob would hold the values three
// times over while encoding (the Slice's own GobEncode copy, gob's message buffer, the
// growing output) and twice while decoding; this holds them once, and a blob of it read from
// disk or from a peer is decoded in place (decodeShared). A shuffle's unpack writes its
// output partition straight into this layout (newChunkBlob).
//
//	u8 dtype | u8 0 | u16 ndim | u32 len HostFallback | u32 len HostRead | u32 len Lib |
//	f64 HostSeconds | ndim × u64 shape | the three strings | zeros to 16 bytes | values
const encChunk = 4

// chunkAlign is the alignment of the values in an encChunk blob's Data.
const chunkAlign = 16

// soleChunk returns v's one output when encChunk can carry it.
func soleChunk(v any) (*plan.Output, bool) {
	outs, ok := v.([]*plan.Output)
	if !ok || len(outs) != 1 || outs[0] == nil || outs[0].Aux != nil {
		return nil, false
	}
	o := outs[0]
	if !o.Data.DType().Valid() || o.Data.DType().Size() == 0 || len(o.Shape) > math.MaxUint16 {
		return nil, false
	}
	return o, true
}

// chunkHeader returns the header of o's encChunk layout, padded to chunkAlign.
func chunkHeader(o *plan.Output) []byte {
	n := 24 + 8*len(o.Shape) + len(o.HostFallback) + len(o.HostRead) + len(o.Lib)
	n = (n + chunkAlign - 1) / chunkAlign * chunkAlign
	h := make([]byte, n)
	h[0] = byte(o.Data.DType())
	binary.LittleEndian.PutUint16(h[2:], uint16(len(o.Shape)))
	binary.LittleEndian.PutUint32(h[4:], uint32(len(o.HostFallback)))
	binary.LittleEndian.PutUint32(h[8:], uint32(len(o.HostRead)))
	binary.LittleEndian.PutUint32(h[12:], uint32(len(o.Lib)))
	binary.LittleEndian.PutUint64(h[16:], math.Float64bits(o.HostSeconds))
	at := 24
	for _, d := range o.Shape {
		binary.LittleEndian.PutUint64(h[at:], uint64(d))
		at += 8
	}
	at += copy(h[at:], o.HostFallback)
	at += copy(h[at:], o.HostRead)
	copy(h[at:], o.Lib)
	return h
}

// encodeChunk encodes o raw (encChunk): one copy of its values.
func encodeChunk(o *plan.Output) *blob {
	h := chunkHeader(o)
	vals := o.Data.Bytes()
	data := make([]byte, len(h)+len(vals))
	copy(data, h)
	copy(data[len(h):], vals)
	return &blob{Enc: encChunk, Data: data}
}

// newChunkBlob allocates the encChunk blob of a 1-D chunk of n values of dt, and returns it
// with a view of its values for the caller to fill: the chunk is made in place, never copied.
func newChunkBlob(dt dtype.DType, n int) (*blob, dtype.Slice, error) {
	h := chunkHeader(&plan.Output{Shape: []int{n}, Data: dtype.Make(dt, 0)})
	data := make([]byte, len(h)+n*dt.Size())
	copy(data, h)
	vals, ok := viewBytes(dt, data[len(h):])
	if !ok {
		return nil, dtype.Slice{}, fmt.Errorf("a chunk buffer of %v is not aligned", dt)
	}
	return &blob{Enc: encChunk, Data: data}, vals, nil
}

// decodeChunk decodes an encChunk blob. shared: the values alias b's Data when it is aligned
// (the caller neither writes them nor lets b's memory be reused); else they are copied.
func decodeChunk(b *blob, shared bool) ([]*plan.Output, error) {
	d := b.Data
	if len(d) < 24 {
		return nil, errors.New("decode chunk: short header")
	}
	dt := dtype.DType(d[0])
	if !dt.Valid() || dt.Size() == 0 {
		return nil, fmt.Errorf("decode chunk: dtype %d", d[0])
	}
	ndim := int(binary.LittleEndian.Uint16(d[2:]))
	ls := [3]int{int(binary.LittleEndian.Uint32(d[4:])), int(binary.LittleEndian.Uint32(d[8:])), int(binary.LittleEndian.Uint32(d[12:]))}
	n := 24 + 8*ndim + ls[0] + ls[1] + ls[2]
	n = (n + chunkAlign - 1) / chunkAlign * chunkAlign
	if n > len(d) || (len(d)-n)%dt.Size() != 0 {
		return nil, fmt.Errorf("decode chunk: %d bytes for a header of %d and %v values", len(d), n, dt)
	}
	o := &plan.Output{Shape: make([]int, ndim), HostSeconds: math.Float64frombits(binary.LittleEndian.Uint64(d[16:]))}
	at := 24
	for i := range o.Shape {
		o.Shape[i] = int(binary.LittleEndian.Uint64(d[at:]))
		at += 8
	}
	var strs [3]string
	for i, l := range ls {
		strs[i] = string(d[at : at+l])
		at += l
	}
	o.HostFallback, o.HostRead, o.Lib = strs[0], strs[1], strs[2]
	vals := d[n:]
	var ok bool
	if shared {
		o.Data, ok = viewBytes(dt, vals)
	}
	if !ok {
		var err error
		if o.Data, err = dtype.FromBytes(dt, vals); err != nil {
			return nil, fmt.Errorf("decode chunk: %w", err)
		}
	}
	return []*plan.Output{o}, nil
}

// viewBytes returns b's bytes as values of dt without copying; false when b is not aligned
// for dt.
func viewBytes(dt dtype.DType, b []byte) (dtype.Slice, bool) {
	sz := dt.Size()
	if sz == 0 || len(b)%sz != 0 {
		return dtype.Slice{}, false
	}
	n := len(b) / sz
	if n == 0 {
		return dtype.Make(dt, 0), true
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	align := min(sz, 8)
	if dt.IsComplex() {
		align = min(sz/2, 8)
	}
	if uintptr(p)%uintptr(align) != 0 {
		return dtype.Slice{}, false
	}
	var s dtype.Slice
	var err error
	switch dt {
	case dtype.Bool:
		s, err = dtype.Of(unsafe.Slice((*bool)(p), n))
	case dtype.Int8:
		s, err = dtype.Of(unsafe.Slice((*int8)(p), n))
	case dtype.Int16:
		s, err = dtype.Of(unsafe.Slice((*int16)(p), n))
	case dtype.Int32:
		s, err = dtype.Of(unsafe.Slice((*int32)(p), n))
	case dtype.Int64:
		s, err = dtype.Of(unsafe.Slice((*int64)(p), n))
	case dtype.Uint8:
		s, err = dtype.Of(unsafe.Slice((*uint8)(p), n))
	case dtype.Uint16:
		s, err = dtype.Of(unsafe.Slice((*uint16)(p), n))
	case dtype.Uint32:
		s, err = dtype.Of(unsafe.Slice((*uint32)(p), n))
	case dtype.Uint64:
		s, err = dtype.Of(unsafe.Slice((*uint64)(p), n))
	case dtype.Float32:
		s, err = dtype.Of(unsafe.Slice((*float32)(p), n))
	case dtype.Float64:
		s, err = dtype.Of(unsafe.Slice((*float64)(p), n))
	case dtype.Complex64:
		s, err = dtype.Of(unsafe.Slice((*complex64)(p), n))
	case dtype.Complex128:
		s, err = dtype.Of(unsafe.Slice((*complex128)(p), n))
	default:
		return dtype.Slice{}, false
	}
	return s, err == nil && s.DType() == dt
}
