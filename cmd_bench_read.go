package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/gpunotes/gpunotes/dataframe"
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
	// Rows, Columns and Path are a Parquet read's (the frame's rows and columns, its Path).
	Rows    int    `json:"rows,omitempty"`
	Columns int    `json:"columns,omitempty"`
	Where   string `json:"where,omitempty"`
	Steps   string `json:"steps,omitempty"`
}

// benchRead reads a .npy file or a Zarr store and sums it: the time from opening it to the
// sum, on the CPU (bench/io.sh runs it against NumPy, zarr-python + dask and dd) or with
// --backend gpu on one GPU (chunks go from the file to the device through pinned buffers).
// A .parquet file or a directory of them (not .zarr) is read with dataframe.ReadParquet and
// persisted (--backend gpu: row groups decoded on the host while earlier ones go to the device
// through pinned buffers), then its first numeric column summed where it is held
// (bench/parquet_read.py times pyarrow + CuPy on the same file).
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
		return fmt.Errorf("%w: gpunotes bench read PATH.npy|STORE.zarr|DATA.parquet [--chunks R,C] [--threads N] [--backend cpu|gpu] [--json]", errUsage)
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
	if isParquet(path) {
		return benchReadParquet(ctx, path, on, *backend, *threads, *asJSON, w)
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

// isParquet reports whether bench read takes path as Parquet: a .parquet file, or a directory
// that is not a Zarr store.
func isParquet(path string) bool {
	if strings.HasSuffix(path, ".parquet") {
		return true
	}
	st, err := os.Stat(path)
	if err != nil || !st.IsDir() || strings.HasSuffix(strings.TrimSuffix(path, "/"), ".zarr") {
		return false
	}
	_, err = os.Stat(path + "/.zarray")
	return err != nil
}

// benchReadParquet times ReadParquet(path).Persist(on) and a sum of its first numeric column
// there; Bytes is the columns' bytes in memory (8 per string row: its position).
func benchReadParquet(ctx context.Context, path string, on gpuarray.ComputeOption, backend string, threads int, asJSON bool, w io.Writer) error {
	opts := []gpuarray.ComputeOption{on, gpuarray.WithContext(ctx)}
	start := time.Now()
	f := dataframe.ReadParquet(path).Persist(opts...)
	if err := f.Err(); err != nil {
		return fmt.Errorf("bench read: %w", err)
	}
	res := readResult{Path: path, Format: "parquet", Threads: threads, Backend: backend, Where: f.Where(), Steps: f.Path()}
	rows, cols, err := f.Shape(opts...)
	if err != nil {
		return fmt.Errorf("bench read: %w", err)
	}
	res.Rows, res.Columns = rows, cols
	var first string
	for _, fd := range f.Dtypes() {
		a, err := f.Array(fd.Name)
		if err != nil {
			return fmt.Errorf("bench read: %w", err)
		}
		res.Bytes += a.NBytes()
		if first == "" && fd.DType.IsNumeric() {
			first = fd.Name
		}
	}
	if first != "" {
		a, _ := f.Array(first)
		if res.Sum, err = a.AsType(gpuarray.Float64).Sum().Float64(opts...); err != nil {
			return fmt.Errorf("bench read: %w", err)
		}
	}
	res.Seconds = time.Since(start).Seconds()
	res.Chunks = []int{f.NPartitions()}
	if asJSON {
		return json.NewEncoder(w).Encode(res)
	}
	_, err = fmt.Fprintf(w, "%s (parquet, %d rows, %d columns, %d bytes in memory, %d partitions, %s): held on %s, sum of %s %v in %.3f s (%.0f MB/s)\n",
		path, rows, cols, res.Bytes, f.NPartitions(), backend, res.Where, first, res.Sum, res.Seconds, float64(res.Bytes)/res.Seconds/1e6)
	return err
}
