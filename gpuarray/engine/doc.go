// Package engine holds the parts of gpuarray's execution that need no array: the CPU
// schedulers of plan tasks (Inline, Threads: gpuarray.Inline and gpuarray.Threads), a
// computation's progress (Progress: the callback and the cell's bar), the host fallbacks it
// notes for Path (HostNotes), the host memory of held arrays' copies (HostBuffer, bounded by
// DefaultMemoryLimit). It imports plan, cpu and display, never gpuarray: gpuarray (the API:
// arrays, their ops, Compute and Persist) and the packages above it, such as dataframe, use it.
//
// The GPU scheduler, GPU residency (chunks persisted on GPUs, device buffers, peer copies),
// host persistence and result assembly still live in gpuarray: they reach into the array's
// graph and share unexported state with the call paths (gpu_calls.go, gpu_results.go); they
// move here once that seam is an interface (see DESIGN.md's layout).
package engine
