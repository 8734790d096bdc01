// Package slurm places cluster workers with SLURM, as dask-jobqueue's SLURMCluster does: a
// scheduler runs in the notebook's process, and every worker job submitted with sbatch runs
// `gpunotes cuda-worker` (one worker per GPU the job got) against it with the cluster's token.
// Scale and Adapt submit and cancel jobs; Close cancels them all (scancel). The cluster's HTML
// repr shows each job's id and state next to its workers, and JobScript shows the batch script.
//
// SLURM places the processes; the scheduler/worker protocol is package cluster's.
package slurm
