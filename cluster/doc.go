// Package cluster is a LocalCUDACluster for Go: GPU discovery through NVML (cluster/gpuinfo),
// a scheduler that lives in the kernel process and listens on TCP, worker processes of the
// gpunotes binary pinned one per GPU, MIG instance or virtual GPU (`gpunotes worker`), a
// nanny that restarts workers that die, and a client with futures.
//
// User functions run on workers by shipping source: a top-level func declared in a cell, with
// the declarations it uses, is evaluated by the worker's own interpreter (an Evaluator). Array
// chunks of gpuarray run on workers through a ChunkExecutor.
//
// The protocol is this package's own: a gob stream per direction over TCP, opened by a hello
// carrying a shared token. Task states are explicit: waiting, processing, memory, erred,
// cancelled. Results stay on workers until gathered and spill to disk past the memory limit.
package cluster
