package gpuarray

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"

	"github.com/gpunotes/gpunotes/gpuarray/expr"
)

func init() {
	// An array travels inside values of type any (a cluster task's result or argument).
	gob.Register(&Array{})
}

// wireArray is an array as gob carries it: computed, with its chunks.
type wireArray struct {
	Shape  []int
	Chunks [][]int
	DType  uint8
	Data   []float64
	Err    string
}

// GobEncode computes the array (with the session's defaults) and encodes its values, shape,
// chunks and dtype, so an array can be a cluster task's argument or result; an array with an
// error is encoded as that error.
func (a *Array) GobEncode() ([]byte, error) {
	w := wireArray{}
	if err := a.Err(); err != nil {
		w.Err = err.Error()
	} else {
		vals, err := a.ToSlice()
		if err != nil {
			return nil, fmt.Errorf("encode array: %w", err)
		}
		w.Shape, w.Chunks, w.DType, w.Data = a.Shape(), a.Chunks(), uint8(a.n.DType), vals
	}
	var buf bytes.Buffer
	if err := gob.NewEncoder(&buf).Encode(w); err != nil {
		return nil, fmt.Errorf("encode array: %w", err)
	}
	return buf.Bytes(), nil
}

// GobDecode rebuilds an array that GobEncode encoded, computed, in host memory.
func (a *Array) GobDecode(b []byte) error {
	var w wireArray
	if err := gob.NewDecoder(bytes.NewReader(b)).Decode(&w); err != nil {
		return fmt.Errorf("decode array: %w", err)
	}
	if w.Err != "" {
		*a = Array{err: errors.New(w.Err)}
		return nil
	}
	n, err := expr.NewData(w.Data, expr.DType(w.DType), w.Shape, w.Chunks)
	if err != nil {
		return fmt.Errorf("decode array: %w", err)
	}
	*a = Array{n: n}
	return nil
}
