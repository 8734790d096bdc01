package dataframe

import (
	"fmt"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// DType is a column's type, by pandas' name: "int64", "float64", "bool", "datetime64[us]",
// "string", "category", ...
type DType string

// The column types. Numeric and bool columns are gpuarray arrays of that dtype; datetimes are
// int64 arrays of ticks since the Unix epoch in their unit; strings are Arrow-layout buffers
// (offsets and bytes) with an int64 array of positions into them; categoricals are int32
// codes into a dictionary of strings.
const (
	Int8       DType = "int8"
	Int16      DType = "int16"
	Int32      DType = "int32"
	Int64      DType = "int64"
	Uint8      DType = "uint8"
	Uint16     DType = "uint16"
	Uint32     DType = "uint32"
	Uint64     DType = "uint64"
	Float32    DType = "float32"
	Float64    DType = "float64"
	Bool       DType = "bool"
	String     DType = "string"
	Category   DType = "category"
	DatetimeS  DType = "datetime64[s]"
	DatetimeMS DType = "datetime64[ms]"
	DatetimeUS DType = "datetime64[us]"
	DatetimeNS DType = "datetime64[ns]"
)

// IsDatetime reports whether t is a datetime type.
func (t DType) IsDatetime() bool { return strings.HasPrefix(string(t), "datetime64[") }

// IsNumeric reports whether t is an integer or floating type.
func (t DType) IsNumeric() bool {
	a, ok := t.array()
	return ok && t != Bool && t != String && t != Category && !t.IsDatetime() && a != gpuarray.Bool
}

// IsFloat reports whether t is a floating type.
func (t DType) IsFloat() bool { return t == Float32 || t == Float64 }

// IsInteger reports whether t is an integer type.
func (t DType) IsInteger() bool { return t.IsNumeric() && !t.IsFloat() }

// array returns the gpuarray dtype that holds t's values (codes for categoricals, positions
// for strings).
func (t DType) array() (gpuarray.DType, bool) {
	switch t {
	case Int8:
		return gpuarray.Int8, true
	case Int16:
		return gpuarray.Int16, true
	case Int32, Category:
		return gpuarray.Int32, true
	case Int64, String:
		return gpuarray.Int64, true
	case Uint8:
		return gpuarray.Uint8, true
	case Uint16:
		return gpuarray.Uint16, true
	case Uint32:
		return gpuarray.Uint32, true
	case Uint64:
		return gpuarray.Uint64, true
	case Float32:
		return gpuarray.Float32, true
	case Float64:
		return gpuarray.Float64, true
	case Bool:
		return gpuarray.Bool, true
	}
	if t.IsDatetime() {
		return gpuarray.Int64, true
	}
	return 0, false
}

// unitTicks is the ticks per second of a datetime type.
func (t DType) unitTicks() int64 {
	switch t {
	case DatetimeS:
		return 1
	case DatetimeMS:
		return 1e3
	case DatetimeUS:
		return 1e6
	case DatetimeNS:
		return 1e9
	}
	return 0
}

func dtypeOfArray(dt gpuarray.DType) (DType, error) {
	switch dt {
	case gpuarray.Int8:
		return Int8, nil
	case gpuarray.Int16:
		return Int16, nil
	case gpuarray.Int32:
		return Int32, nil
	case gpuarray.Int64:
		return Int64, nil
	case gpuarray.Uint8:
		return Uint8, nil
	case gpuarray.Uint16:
		return Uint16, nil
	case gpuarray.Uint32:
		return Uint32, nil
	case gpuarray.Uint64:
		return Uint64, nil
	case gpuarray.Float32:
		return Float32, nil
	case gpuarray.Float64:
		return Float64, nil
	case gpuarray.Bool:
		return Bool, nil
	}
	return "", fmt.Errorf("no column type holds gpuarray dtype %v", dt)
}

// ParseDType returns the type named s ("int64", "float", "str", "datetime64[ns]", ...).
func ParseDType(s string) (DType, error) {
	switch s {
	case "int":
		return Int64, nil
	case "float":
		return Float64, nil
	case "str", "object", "large_string", "utf8":
		return String, nil
	case "datetime", "datetime64", "timestamp":
		return DatetimeUS, nil
	}
	t := DType(s)
	if _, ok := t.array(); ok || t == String || t == Category {
		if t.IsDatetime() && t.unitTicks() == 0 {
			return "", fmt.Errorf("unknown datetime unit in %q (have s, ms, us, ns)", s)
		}
		return t, nil
	}
	return "", fmt.Errorf("unknown column type %q", s)
}
