package dataframe

import (
	"fmt"
	"slices"

	"github.com/gpunotes/gpunotes/dataframe/hashagg"
	"github.com/gpunotes/gpunotes/gpuarray"
)

// String columns on a GPU (issue 31). A string column is int64 positions into a heap; where a
// run computes on a GPU (OnGPU, or the column's positions held there) the heap is held on that
// GPU too, in Arrow's large_string layout (gpuarray.DeviceStrings: Persist puts it there,
// else the first device string step copies it and the heap keeps the copy), and the string
// kernels run over it there: str.len, str.contains/startswith/endswith, == and != a literal
// give per-heap-entry results held on the GPU, which the array engine gathers per row by the
// positions (a device gather), so a filter on them, and sums after, stay on the device. A
// GroupBy on string keys dictionary-encodes the heap on the device (a hash table, its slots
// ranked by a device scan) and aggregates the codes with the dense-code kernels. Everything
// else on strings (lower, upper, slice, split, casts) runs on the host, as before, which Path
// names and the run warns. The CPU path and cluster workers use the host heaps unchanged.

// onGPU returns h held on the GPU that opts name, copying it there the first time (copied
// says so); the heap keeps the copy (heaps never change once built), which goes back to the
// device's pool with it.
func (h *strHeap) onGPU(opts []gpuarray.ComputeOption) (ds *gpuarray.DeviceStrings, copied bool, err error) {
	h.devMu.Lock()
	defer h.devMu.Unlock()
	if h.dev != nil && h.dev.On(opts...) {
		return h.dev, false, nil
	}
	ds, err = gpuarray.PersistStrings(h.offsets, h.data, opts...)
	if err != nil {
		return nil, false, err
	}
	h.dev = ds
	return ds, true, nil
}

// deviceHeap returns x's heap on the GPU that the run computes x on (rc's GPU options, or the
// GPU that holds x's positions), with those options; ok is false when the run is not on a
// GPU. A copy to the device is noted.
func deviceHeap(rc *runCtx, x *column) (ds *gpuarray.DeviceStrings, opts []gpuarray.ComputeOption, ok bool) {
	opts, on := deviceOptsOf(rc, []*column{x})
	if !on {
		return nil, nil, false
	}
	ds, copied, err := x.heap.onGPU(opts)
	if err != nil {
		rc.host("strings: not held on the GPU (%v), so they run on the host", err)
		return nil, nil, false
	}
	if copied {
		rc.device(fmt.Sprintf("string heap of %d strings (%d bytes) copied to %s", x.heap.len(), len(x.heap.data), ds.Where()))
	}
	return ds, opts, true
}

// gatherHeld returns per-heap values held on a GPU at the rows' positions, as gather.
func gatherHeld(rc *runCtx, perHeap, pos *gpuarray.Array) (*gpuarray.Array, error) {
	if len(pos.Shape()) == 1 && pos.Shape()[0] < 0 {
		rc.host("filtered string positions resolved before a string function (the mask computed once more)")
		p, err := pos.ComputeChunkSizes(rc.opts...)
		if err != nil {
			return nil, err
		}
		pos = p
	}
	return gpuarray.Take(perHeap, pos, 0), nil
}

// strMatchGPU runs string kernel op (gpuarray.DeviceStrings.Match) of x's heap on the GPU;
// ok is false when the run is not on a GPU (the host path runs).
func strMatchGPU(rc *runCtx, op, lit string, x *column) (arr *gpuarray.Array, ok bool, err error) {
	ds, _, on := deviceHeap(rc, x)
	if !on {
		return nil, false, nil
	}
	per, err := ds.Match(op, lit)
	if err != nil {
		return nil, true, err
	}
	rc.device(fmt.Sprintf("str.%s: string kernel over %d heap strings on %s, gathered per row there", op, x.heap.len(), ds.Where()))
	arr, err = gatherHeld(rc, per, x.arr)
	return arr, true, err
}

// deviceStringCodes dictionary-encodes a heap on the GPU that opts name: each string's code, held
// there, and a string index of each code (a variable so that tests without a GPU run the
// groupby's device path over a host emulation).
var deviceStringCodes = func(rc *runCtx, h *strHeap, opts []gpuarray.ComputeOption) (*gpuarray.Array, []int64, string, error) {
	ds, copied, err := h.onGPU(opts)
	if err != nil {
		return nil, nil, "", err
	}
	if copied {
		rc.device(fmt.Sprintf("string heap of %d strings (%d bytes) copied to %s", h.len(), len(h.data), ds.Where()))
	}
	h.devMu.Lock()
	defer h.devMu.Unlock()
	if h.devOf == ds {
		return h.devCodes, h.devFirst, fmt.Sprintf("strings dictionary-encoded on %s (%d distinct of %d strings, the heap's encoding kept from an earlier step)", ds.Where(), len(h.devFirst), h.len()), nil
	}
	codes, first, note, err := ds.Encode(opts...)
	if err != nil {
		return nil, nil, "", err
	}
	h.devCodes, h.devFirst, h.devOf = codes, first, ds
	return codes, first, note, nil
}

// encodeStringKeys replaces the string key columns of a device groupby by their dictionary
// codes, computed on the GPU (stringCodes, gathered per row there), each with a heap of its
// distinct strings in code order, and returns the key types the device path plans with (the
// codes' Int64). Keys stay strings (the host path) when the groupby would not take the
// device path anyway or the encoding fails (named in Path).
func encodeStringKeys(rc *runCtx, keyCols []*column, keyTypes, valTypes []DType, specs []hashagg.Spec, opts []gpuarray.ComputeOption) ([]*column, []DType) {
	if !slices.Contains(keyTypes, String) {
		return keyCols, keyTypes
	}
	types := slices.Clone(keyTypes)
	for i, t := range types {
		if t == String {
			types[i] = Int64
		}
	}
	if deviceBlocker(types, valTypes, specs) != "" {
		return keyCols, keyTypes
	}
	cols := slices.Clone(keyCols)
	for i, c := range keyCols {
		if c.dt != String {
			continue
		}
		codes, first, note, err := deviceStringCodes(rc, c.heap, opts)
		if err == nil {
			var arr *gpuarray.Array
			if arr, err = gatherHeld(rc, codes, c.arr); err == nil {
				reps := newHeap(len(first))
				for _, j := range first {
					reps.add(c.heap.at(j))
				}
				d := *c
				d.arr, d.heap = arr, reps
				cols[i] = &d
				rc.device("groupby: string key " + quote(c.name) + ": " + note)
				continue
			}
		}
		rc.host("groupby on a GPU: string key %q not encoded on the device (%v)", c.name, err)
		return keyCols, keyTypes
	}
	return cols, types
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// persistHeaps keeps the heaps of t's string and categorical columns on the GPU that opts name
// (nothing for other targets), as Persist keeps their positions and codes there.
func persistHeaps(t *table, opts []gpuarray.ComputeOption) error {
	tg, err := gpuarray.TargetOf(opts...)
	if err != nil || tg.Backend != "gpu" {
		return nil
	}
	for _, c := range t.cols {
		if c.dt == String || c.dt == Category {
			if _, _, err := c.heap.onGPU(opts); err != nil {
				return fmt.Errorf("column %q's strings: %w", c.name, err)
			}
		}
	}
	return nil
}
