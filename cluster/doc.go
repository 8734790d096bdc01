// Package cluster is a LocalCUDACluster for Go, and its way to many machines: GPU discovery
// through NVML (cluster/gpuinfo), a scheduler that listens on TCP, worker processes of the
// gpunotes binary pinned one per GPU, MIG instance or virtual GPU (`gpunotes worker`), a
// nanny that restarts workers that die, a client with futures, and a live dashboard.
//
// On one machine, NewLocalCUDA runs the scheduler in the kernel process and starts the
// workers. Across machines:
//
//	gpunotes scheduler --listen HOST:PORT [--token-file F] [--dashboard ADDR|off] [--heartbeat 5s]
//	gpunotes cuda-worker tcp://HOST:PORT [--token-file F] [--nworkers N] [--nthreads N] [--cpu]
//	                     [--name-prefix P] [--memory-limit M] [--device-memory-limit M]
//	                     [--devices LIST] [--resource NAME=AMOUNT] [--reconnect 5s]
//	c, err := cluster.Connect("tcp://HOST:PORT", token)   // in a notebook
//
// All three commands take --tls-cert FILE --tls-key FILE [--tls-ca FILE] (see TLSFiles):
// with them every connection is under TLS, mutual when a CA is given, the scheduler refuses
// plaintext (and logs each refusal with the remote address), and clients use ConnectTLS.
//
// That contract is stable (resource managers, SLURM and Kubernetes, build on it):
//   - The token comes from GPUNOTES_CLUSTER_TOKEN or --token-file, never argv. A scheduler
//     given none generates one (logged, or written to --token-file). Both sides prove they
//     know it (auth.go); the scheduler logs every refusal with the remote address.
//   - The scheduler prints one line on stdout when it listens:
//     "scheduler tcp://HOST:PORT dashboard URL" (URL is "off" when disabled); its log is on
//     stderr. SIGTERM or SIGINT stop it without telling workers to exit.
//   - cuda-worker starts one worker process per local GPU (CPU workers without GPUs), named
//     PREFIX-gpuN / PREFIX-cpuN (PREFIX defaults to the host name; names must be unique in the
//     cluster). Workers reconnect by themselves when the scheduler restarts. cuda-worker exits
//     non-zero when the scheduler refuses its workers (a wrong token), and on SIGTERM stops its
//     workers and exits 0.
//   - A worker serves its results to peers on a data port bound to the address it reaches the
//     scheduler from (any free port): workers must reach each other there.
//
// The scheduler drops a worker that has been silent for the heartbeat (workers report every
// second) and reruns its tasks elsewhere, recomputing results it held. Clients may come and go:
// a disconnected client's tasks are released; the scheduler keeps serving.
//
// User functions run on workers by shipping source: a top-level func declared in a cell, with
// the declarations it uses, is evaluated by the worker's own interpreter (an Evaluator). Array
// chunks of gpuarray run on workers through a ChunkExecutor.
//
// The protocol is this package's own: a gob stream per direction over TCP, opened by a hello
// carrying a shared token and a role (worker or client). Task states are explicit: waiting,
// processing, memory, erred, cancelled. Results stay on workers until gathered and spill to
// disk past the memory limit; a task's inputs held by other workers are fetched from them
// directly over a plain byte protocol (under TLS when configured), never through the
// scheduler or the client.
//
// The dashboard (Client.Dashboard; 127.0.0.1 unless asked otherwise, and then only with the
// token) shows the cluster and worker tables, memory and utilization over time, and the task
// stream, as one self-contained page polling JSON.
package cluster
