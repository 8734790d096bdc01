package hashagg

import "github.com/gpunotes/gpunotes/gpuarray/dtype"

// ValuesOf is a value column as the folds read it: in its own type where they take that type
// (int32, int64, float64), else widened to int64 or float64. An empty column keeps its kind.
// Valid, Pos and Offset are left for the caller.
func ValuesOf(s dtype.Slice) Values {
	var v Values
	switch dt := s.DType(); {
	case dt == dtype.Float64:
		v.Float = s.Float64s()
	case dt.IsFloat():
		v.Float = dtype.Convert(s, dtype.Float64).Float64s()
	case dt == dtype.Int32:
		v.Int32 = s.Int32s()
	case dt == dtype.Int64:
		v.Int = s.Int64s()
	default:
		v.Int = dtype.Convert(s, dtype.Int64).Int64s()
	}
	switch {
	case s.DType().IsFloat() && v.Float == nil:
		v.Float = []float64{}
	case v.Int32 == nil && v.Int == nil && v.Float == nil:
		v.Int = []int64{}
	}
	return v
}
