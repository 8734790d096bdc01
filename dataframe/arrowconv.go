package dataframe

import (
	"fmt"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
)

// dtypeOfArrow maps an Arrow type to a column type.
func dtypeOfArrow(t arrow.DataType) (DType, error) {
	switch t.ID() {
	case arrow.INT8:
		return Int8, nil
	case arrow.INT16:
		return Int16, nil
	case arrow.INT32:
		return Int32, nil
	case arrow.INT64:
		return Int64, nil
	case arrow.UINT8:
		return Uint8, nil
	case arrow.UINT16:
		return Uint16, nil
	case arrow.UINT32:
		return Uint32, nil
	case arrow.UINT64:
		return Uint64, nil
	case arrow.FLOAT32:
		return Float32, nil
	case arrow.FLOAT64:
		return Float64, nil
	case arrow.BOOL:
		return Bool, nil
	case arrow.STRING, arrow.LARGE_STRING, arrow.STRING_VIEW:
		return String, nil
	case arrow.DICTIONARY:
		d := t.(*arrow.DictionaryType)
		if k := d.ValueType.ID(); k == arrow.STRING || k == arrow.LARGE_STRING {
			return Category, nil
		}
	case arrow.TIMESTAMP:
		switch t.(*arrow.TimestampType).Unit {
		case arrow.Second:
			return DatetimeS, nil
		case arrow.Millisecond:
			return DatetimeMS, nil
		case arrow.Microsecond:
			return DatetimeUS, nil
		case arrow.Nanosecond:
			return DatetimeNS, nil
		}
	case arrow.DATE32:
		return DatetimeS, nil
	case arrow.DATE64:
		return DatetimeMS, nil
	}
	return "", fmt.Errorf("the Arrow type %v has no column type here (have integers, floats, bool, strings, string dictionaries, timestamps, dates)", t)
}

// arrowType maps a column type to the Arrow type written.
func arrowType(t DType) arrow.DataType {
	switch t {
	case Int8:
		return arrow.PrimitiveTypes.Int8
	case Int16:
		return arrow.PrimitiveTypes.Int16
	case Int32:
		return arrow.PrimitiveTypes.Int32
	case Int64:
		return arrow.PrimitiveTypes.Int64
	case Uint8:
		return arrow.PrimitiveTypes.Uint8
	case Uint16:
		return arrow.PrimitiveTypes.Uint16
	case Uint32:
		return arrow.PrimitiveTypes.Uint32
	case Uint64:
		return arrow.PrimitiveTypes.Uint64
	case Float32:
		return arrow.PrimitiveTypes.Float32
	case Float64:
		return arrow.PrimitiveTypes.Float64
	case Bool:
		return arrow.FixedWidthTypes.Boolean
	case String:
		return arrow.BinaryTypes.String
	case Category:
		return &arrow.DictionaryType{IndexType: arrow.PrimitiveTypes.Int32, ValueType: arrow.BinaryTypes.String}
	case DatetimeS:
		return &arrow.TimestampType{Unit: arrow.Second}
	case DatetimeMS:
		return &arrow.TimestampType{Unit: arrow.Millisecond}
	case DatetimeUS:
		return &arrow.TimestampType{Unit: arrow.Microsecond}
	case DatetimeNS:
		return &arrow.TimestampType{Unit: arrow.Nanosecond}
	}
	return nil
}

func validityOf(a arrow.Array, n int) []bool {
	if a.NullN() == 0 {
		return nil
	}
	v := make([]bool, n)
	for i := range v {
		v[i] = a.IsValid(i)
	}
	return v
}

// hostColOfChunks converts the chunks of one Arrow column into a host column.
func hostColOfChunks(name string, chunks []arrow.Array) (*hostCol, error) {
	if len(chunks) == 0 {
		return nil, fmt.Errorf("column %q has no data", name)
	}
	dt, err := dtypeOfArrow(chunks[0].DataType())
	if err != nil {
		return nil, fmt.Errorf("column %q: %w", name, err)
	}
	var parts []hostCol
	for _, a := range chunks {
		h, err := hostColOfArrow(name, dt, a)
		if err != nil {
			return nil, err
		}
		parts = append(parts, *h)
	}
	if len(parts) == 1 {
		return &parts[0], nil
	}
	return concatCols(parts)
}

func primitive[T any](vals []T, n int) dtype.Slice {
	s, _ := dtype.Of(append([]T(nil), vals[:n]...))
	return s
}

func hostColOfArrow(name string, dt DType, a arrow.Array) (*hostCol, error) {
	n := a.Len()
	h := &hostCol{name: name, dt: dt, valid: validityOf(a, n)}
	switch x := a.(type) {
	case *array.Int8:
		h.vals = primitive(x.Int8Values(), n)
	case *array.Int16:
		h.vals = primitive(x.Int16Values(), n)
	case *array.Int32:
		h.vals = primitive(x.Int32Values(), n)
	case *array.Int64:
		h.vals = primitive(x.Int64Values(), n)
	case *array.Uint8:
		h.vals = primitive(x.Uint8Values(), n)
	case *array.Uint16:
		h.vals = primitive(x.Uint16Values(), n)
	case *array.Uint32:
		h.vals = primitive(x.Uint32Values(), n)
	case *array.Uint64:
		h.vals = primitive(x.Uint64Values(), n)
	case *array.Float32:
		h.vals = primitive(x.Float32Values(), n)
	case *array.Float64:
		h.vals = primitive(x.Float64Values(), n)
	case *array.Boolean:
		b := make([]bool, n)
		for i := range b {
			b[i] = x.Value(i)
		}
		h.vals = dtype.OfBool(b)
	case *array.Timestamp:
		t := make([]int64, n)
		for i := range t {
			t[i] = int64(x.Value(i))
		}
		h.vals = dtype.OfInt64(t)
	case *array.Date32:
		t := make([]int64, n)
		for i := range t {
			t[i] = int64(x.Value(i)) * 86400
		}
		h.vals = dtype.OfInt64(t)
	case *array.Date64:
		t := make([]int64, n)
		for i := range t {
			t[i] = int64(x.Value(i))
		}
		h.vals = dtype.OfInt64(t)
	case *array.String, *array.LargeString, *array.StringView:
		s := x.(interface{ Value(int) string })
		heap := newHeap(n)
		for i := 0; i < n; i++ {
			if a.IsValid(i) {
				heap.add(s.Value(i))
			} else {
				heap.add("")
			}
		}
		h.heap, h.vals = heap, dtype.OfInt64(rowsArange([]int{n}))
	case *array.Dictionary:
		d, ok := x.Dictionary().(interface {
			Value(int) string
			Len() int
		})
		if !ok {
			return nil, fmt.Errorf("column %q: dictionary of %v, want strings", name, x.Dictionary().DataType())
		}
		heap := newHeap(d.Len())
		for i := 0; i < d.Len(); i++ {
			heap.add(d.Value(i))
		}
		codes := make([]int32, n)
		for i := range codes {
			if x.IsValid(i) {
				codes[i] = int32(x.GetValueIndex(i))
			}
		}
		s, _ := dtype.Of(codes)
		h.heap, h.vals = heap, s
	default:
		return nil, fmt.Errorf("column %q: Arrow type %v is not read", name, a.DataType())
	}
	return h, nil
}

// recordOf builds an Arrow record of rows [lo, hi) of ht.
func recordOf(ht *hostTable, lo, hi int) (arrow.RecordBatch, error) {
	mem := memory.DefaultAllocator
	fields := make([]arrow.Field, len(ht.cols))
	arrs := make([]arrow.Array, len(ht.cols))
	defer func() {
		for _, a := range arrs {
			if a != nil {
				a.Release()
			}
		}
	}()
	for j, c := range ht.cols {
		at := arrowType(c.dt)
		fields[j] = arrow.Field{Name: c.name, Type: at, Nullable: true}
		b := array.NewBuilder(mem, at)
		for i := lo; i < hi; i++ {
			if !c.isValid(i) {
				b.AppendNull()
				continue
			}
			switch bb := b.(type) {
			case *array.Int8Builder:
				bb.Append(c.vals.Int8s()[i])
			case *array.Int16Builder:
				bb.Append(c.vals.Int16s()[i])
			case *array.Int32Builder:
				bb.Append(c.vals.Int32s()[i])
			case *array.Int64Builder:
				bb.Append(c.vals.Int64s()[i])
			case *array.Uint8Builder:
				bb.Append(c.vals.Uint8s()[i])
			case *array.Uint16Builder:
				bb.Append(c.vals.Uint16s()[i])
			case *array.Uint32Builder:
				bb.Append(c.vals.Uint32s()[i])
			case *array.Uint64Builder:
				bb.Append(c.vals.Uint64s()[i])
			case *array.Float32Builder:
				bb.Append(c.vals.Float32s()[i])
			case *array.Float64Builder:
				bb.Append(c.vals.Float64s()[i])
			case *array.BooleanBuilder:
				bb.Append(c.vals.Bools()[i])
			case *array.TimestampBuilder:
				bb.Append(arrow.Timestamp(c.vals.Int64s()[i]))
			case *array.StringBuilder:
				bb.Append(c.stringAt(i))
			case *array.BinaryDictionaryBuilder:
				if err := bb.AppendString(c.stringAt(i)); err != nil {
					b.Release()
					return nil, fmt.Errorf("column %q: %w", c.name, err)
				}
			default:
				b.Release()
				return nil, fmt.Errorf("column %q: no Arrow builder for %s", c.name, c.dt)
			}
		}
		arrs[j] = b.NewArray()
		b.Release()
	}
	return array.NewRecordBatch(arrow.NewSchema(fields, nil), arrs, int64(hi-lo)), nil
}
