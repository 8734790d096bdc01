package gpuarray

import (
	"bytes"
	"encoding/gob"
	"errors"
	"fmt"
	"runtime"

	"github.com/gpunotes/gpunotes/gpuarray/dtype"
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
	Data   []byte // the values' bytes, in this machine's order (workers and clients share it)
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
		c, err := a.computeHost(nil)
		if err != nil {
			return nil, fmt.Errorf("encode array: %w", err)
		}
		defer runtime.KeepAlive(c) // a held array's host copy lives as long as its buffer
		vals, err := c.n.Values()
		if err != nil {
			return nil, fmt.Errorf("encode array: %w", err)
		}
		w.Shape, w.Chunks, w.DType, w.Data = a.Shape(), a.Chunks(), uint8(vals.DType()), vals.Bytes()
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
	dt := dtype.DType(w.DType)
	if !dt.Valid() || len(w.Data)%dt.Size() != 0 {
		return fmt.Errorf("decode array: dtype %d with %d bytes", w.DType, len(w.Data))
	}
	vals := dtype.Make(dt, len(w.Data)/dt.Size())
	copy(vals.Bytes(), w.Data)
	n, err := expr.NewData(vals, w.Shape, w.Chunks)
	if err != nil {
		return fmt.Errorf("decode array: %w", err)
	}
	*a = Array{n: n}
	return nil
}
