package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/gpuarray"
)

// readResult is the JSON line of `bench read --json`.
type readResult struct {
	Path    string  `json:"path"`
	Format  string  `json:"format"`
	Bytes   int64   `json:"bytes"`
	Chunks  []int   `json:"chunks"`
	Threads int     `json:"threads"`
	Backend string  `json:"backend"`
	Seconds float64 `json:"seconds"`
	Sum     float64 `json:"sum"`
}

// benchRead reads a .npy file or a Zarr store and sums it: the time from opening it to the
// sum, on the CPU (bench/io.sh runs it against NumPy, zarr-python + dask and dd) or with
// --backend gpu on one GPU (chunks go from the file to the device through pinned buffers).
func benchRead(ctx context.Context, args []string, w io.Writer) error {
	fs := flag.NewFlagSet("bench read", flag.ContinueOnError)
	chunks := fs.String("chunks", "", "chunk sizes, comma separated (default: the store's, or 128 MiB for .npy)")
	threads := fs.Int("threads", 0, "goroutines (0: one per core)")
	backend := fs.String("backend", "cpu", "cpu or gpu")
	asJSON := fs.Bool("json", false, "print one JSON line")
	if err := fs.Parse(args); err != nil {
		return fmt.Errorf("%w: bench read: %v", errUsage, err)
	}
	if fs.NArg() >= 1 { // flags may follow the path too
		rest := fs.Args()
		if err := fs.Parse(rest[1:]); err != nil {
			return fmt.Errorf("%w: bench read: %v", errUsage, err)
		}
		if fs.NArg() == 0 {
			fs.Parse(rest[:1])
		}
	}
	if fs.NArg() != 1 {
		return fmt.Errorf("%w: gpunotes bench read PATH [--chunks R,C] [--threads N] [--backend cpu|gpu] [--json]", errUsage)
	}
	on := gpuarray.Threads(*threads)
	if *backend != "cpu" {
		var err error
		if on, _, err = benchBackend("read", *backend, 1); err != nil {
			return err
		}
	}
	path := fs.Arg(0)
	var opts []gpuarray.ArrayOption
	if *chunks != "" {
		var sizes []int
		for _, f := range strings.Split(*chunks, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil {
				return fmt.Errorf("%w: bench read: --chunks %q", errUsage, *chunks)
			}
			sizes = append(sizes, n)
		}
		opts = append(opts, gpuarray.Chunks(sizes...))
	}
	start := time.Now()
	var x *gpuarray.Array
	format := "zarr"
	if strings.HasSuffix(path, ".npy") {
		format = "npy"
		x = gpuarray.LoadNPY(path, opts...)
	} else {
		x = gpuarray.OpenZarr(path, opts...)
	}
	if err := x.Err(); err != nil {
		return fmt.Errorf("bench read: %w", err)
	}
	sum, err := x.Sum().Float64(on, gpuarray.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("bench read: %w", err)
	}
	res := readResult{Path: path, Format: format, Bytes: x.NBytes(), Threads: *threads, Backend: *backend, Seconds: time.Since(start).Seconds(), Sum: sum}
	for _, c := range x.Chunks() {
		res.Chunks = append(res.Chunks, c[0])
	}
	if *asJSON {
		return json.NewEncoder(w).Encode(res)
	}
	_, err = fmt.Fprintf(w, "%s (%s, %d bytes, chunks %v, %s): sum %v in %.3f s (%.0f MB/s)\n", path, format, res.Bytes, res.Chunks, res.Backend, sum, res.Seconds, float64(res.Bytes)/res.Seconds/1e6)
	return err
}
