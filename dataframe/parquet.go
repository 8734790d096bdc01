package dataframe

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/gpunotes/gpunotes/gpuarray/dtype"
	"github.com/gpunotes/gpunotes/internal/atomicfile"
)

// pqPart is one partition of a Parquet read: a row group of a file, with the hive keys of
// its directory.
type pqPart struct {
	file     string
	rowGroup int
	rows     int64
	hive     map[string]string
}

// listParquet expands a file, a glob or a directory (searched recursively for *.parquet and
// hive key=value directories) into files, sorted.
func listParquet(path string) ([]string, error) {
	if strings.ContainsAny(path, "*?[") {
		m, err := filepath.Glob(path)
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("no files match %s", path)
		}
		sort.Strings(m)
		return m, nil
	}
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if !st.IsDir() {
		return []string{path}, nil
	}
	var out []string
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if p != path && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() && (strings.HasSuffix(name, ".parquet") || strings.HasSuffix(name, ".parq")) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no Parquet files under %s", path)
	}
	sort.Strings(out)
	return out, nil
}

// hiveKeys returns the key=value directories between root and file.
func hiveKeys(root, file string) (map[string]string, []string) {
	rel, err := filepath.Rel(root, filepath.Dir(file))
	if err != nil || rel == "." {
		return nil, nil
	}
	m := map[string]string{}
	var order []string
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		if k, v, ok := strings.Cut(part, "="); ok {
			if u, err := url.PathUnescape(v); err == nil { // as pyarrow escapes values
				v = u
			}
			m[k] = v
			order = append(order, k)
		}
	}
	return m, order
}

// ReadParquet reads a Parquet file, a glob of files, or a directory of them (hive
// partitions, key=value directories, become category columns), one partition per row group.
// Columns projects; Filters skips row groups by their statistics (and hive partitions by
// their keys) and filters the rows read. The files' metadata is read now; the data when the
// frame is computed, only the columns the result needs.
func ReadParquet(path string, opts ...Option) (out *Frame) {
	defer func() {
		// arrow-go can panic on corrupt metadata (statistics, row groups): an error frame.
		if r := recover(); r != nil {
			out = errFrame(fmt.Errorf("ReadParquet %s: corrupt metadata: %v", path, r))
		}
	}()
	o := applyOpts(opts)
	files, err := listParquet(path)
	if err != nil {
		return errFrame(fmt.Errorf("ReadParquet: %w", err))
	}
	root := path
	if strings.ContainsAny(path, "*?[") {
		root = filepath.Dir(path)
	}
	var fields []Field
	var hiveOrder []string
	var parts []pqPart
	var total int64
	hiveText := map[string]bool{}
	for fi, name := range files {
		r, fr, err := openParquet(name)
		if err != nil {
			return errFrame(fmt.Errorf("ReadParquet %s: %w", name, err))
		}
		sc, err := fr.Schema()
		if err != nil {
			r.Close()
			return errFrame(fmt.Errorf("ReadParquet %s: %w", name, err))
		}
		var ff []Field
		for _, af := range sc.Fields() {
			if af.Name == "__index_level_0__" {
				continue
			}
			dt, err := dtypeOfArrow(af.Type)
			if err != nil {
				r.Close()
				return errFrame(fmt.Errorf("ReadParquet %s: column %q: %w", name, af.Name, err))
			}
			ff = append(ff, Field{af.Name, dt})
		}
		hive, order := hiveKeys(root, name)
		for k, v := range hive {
			if _, err := strconv.ParseInt(v, 10, 64); err != nil && v != hiveNull {
				hiveText[k] = true
			}
		}
		if fi == 0 {
			fields, hiveOrder = ff, order
			for _, k := range order {
				fields = append(fields, Field{k, Category})
			}
		} else if !slices.Equal(ff, fields[:len(fields)-len(hiveOrder)]) {
			r.Close()
			return errFrame(fmt.Errorf("ReadParquet: %s has columns %v, %s has %v", name, ff, files[0], fields))
		}
		md := r.MetaData()
		for rg := 0; rg < md.NumRowGroups(); rg++ {
			rgm := md.RowGroup(rg)
			if err := checkRowGroupRows(rgm); err != nil {
				r.Close()
				return errFrame(fmt.Errorf("ReadParquet %s row group %d: %w", name, rg, err))
			}
			keep, err := statsMayPass(md, rgm, hive, o.filters)
			if err != nil {
				r.Close()
				return errFrame(fmt.Errorf("ReadParquet %s row group %d: %w", name, rg, err))
			}
			if keep {
				parts = append(parts, pqPart{file: name, rowGroup: rg, rows: rgm.NumRows(), hive: hive})
				total += rgm.NumRows()
			}
		}
		r.Close()
	}
	// Hive keys that are all integers are int64 columns (as pyarrow infers them), others
	// categoricals.
	hiveSet := map[string]bool{}
	for _, k := range hiveOrder {
		hiveSet[k] = true
		if !hiveText[k] {
			fields[slices.IndexFunc(fields, func(f Field) bool { return f.Name == k })].DType = Int64
		}
	}
	f := &Frame{what: fmt.Sprintf("read_parquet %s", path), fields: fields, nparts: len(parts), nrows: int(total)}
	f.read = func(rc *runCtx, need map[string]bool) (*table, error) {
		var cols []string
		for _, fd := range fields {
			if need[fd.Name] {
				cols = append(cols, fd.Name)
			}
		}
		sink, window, ok, err := rc.readSink()
		if err != nil {
			return nil, err
		}
		if ok {
			t, err := readPipelined(rc, sink, window, parts, cols, fields, hiveSet, hiveText)
			if err != nil {
				return nil, err
			}
			rc.host("read_parquet: %d row groups of %d files decoded on the host (arrow-go pqarrow), at most %d at a time, each copied to %s through pinned buffers while the next ones decode%s",
				len(parts), len(files), window, t.rows.Where(), stringsKept(t))
			return t, nil
		}
		rc.host("read_parquet: %d row groups of %d files decoded on the host (arrow-go pqarrow)", len(parts), len(files))
		ht, err := readParts(rc.target.Context, parts, cols, hiveSet, hiveText)
		if err != nil {
			return nil, err
		}
		return tableOf(ht)
	}
	if len(parts) == 0 {
		f = emptyFrame(f)
	}
	for _, c := range o.filters {
		f = f.Filter(c)
	}
	if len(o.columns) > 0 {
		f = f.Select(o.columns...)
		if f.err != nil {
			return errFrame(fmt.Errorf("ReadParquet %s: %w", path, f.err))
		}
	}
	return f
}

// checkRowGroupRows refuses a row group whose row count its column chunks cannot hold (each
// row has at least one value, or null, in every leaf column): the count sizes the row index,
// allocated before the pages that would contradict it are read.
func checkRowGroupRows(rgm *metadata.RowGroupMetaData) error {
	rows := rgm.NumRows()
	if rows < 0 {
		return fmt.Errorf("corrupt metadata: %d rows", rows)
	}
	for c := 0; c < rgm.NumColumns(); c++ {
		cc, err := rgm.ColumnChunk(c)
		if err != nil {
			return err
		}
		if cc.NumValues() < rows {
			return fmt.Errorf("corrupt metadata: %d rows, but column %d holds %d values", rows, c, cc.NumValues())
		}
	}
	return nil
}

// openParquet opens a Parquet file and its Arrow reader: the footer parsed, its stored Arrow
// schema checked (checkStoredSchema) before arrow-go decodes it, and a panic of arrow-go on
// corrupt metadata an error.
func openParquet(name string) (r *file.Reader, fr *pqarrow.FileReader, err error) {
	defer func() {
		if p := recover(); p != nil {
			if r != nil {
				r.Close()
			}
			r, fr, err = nil, nil, fmt.Errorf("corrupt metadata: %v", p)
		}
	}()
	r, err = file.OpenParquetFile(name, false)
	if err != nil {
		return nil, nil, err
	}
	if s := r.MetaData().KeyValueMetadata().FindValue("ARROW:schema"); s != nil {
		if err := checkStoredSchema(*s); err != nil {
			r.Close()
			return nil, nil, err
		}
	}
	fr, err = pqarrow.NewFileReader(r, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		r.Close()
		return nil, nil, err
	}
	return r, fr, nil
}

// emptyFrame is f with no rows (every row group skipped).
func emptyFrame(f *Frame) *Frame {
	ht := &hostTable{lens: []int{0}}
	for _, fd := range f.fields {
		adt, _ := fd.DType.array()
		h := &hostCol{name: fd.Name, dt: fd.DType, vals: dtype.Make(adt, 0)}
		if fd.DType == String || fd.DType == Category {
			h.heap = newHeap(0)
		}
		ht.cols = append(ht.cols, h)
	}
	m := memFrame(f.what, ht)
	m.nparts = 1
	return m
}

func readParts(ctx context.Context, parts []pqPart, cols []string, hive, hiveText map[string]bool) (*hostTable, error) {
	if ctx == nil {
		ctx = context.Background()
	}
	outs := make([]*hostTable, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for i, p := range parts {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			outs[i], errs[i] = readPart(ctx, p, cols, hive, hiveText)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		ht := &hostTable{}
		for _, o := range outs {
			ht.lens = append(ht.lens, o.lens...)
		}
		ht.rows = rowsArange(ht.lens)
		return ht, nil
	}
	ht, err := concatHost(outs)
	if err != nil {
		return nil, err
	}
	ht.rows = rowsArange(ht.lens)
	return ht, nil
}

func readPart(ctx context.Context, p pqPart, cols []string, hive, hiveText map[string]bool) (ht *hostTable, err error) {
	defer func() {
		// arrow-go can panic on corrupt pages; name the file and row group.
		if r := recover(); r != nil {
			err = fmt.Errorf("read %s row group %d: corrupt data: %v", p.file, p.rowGroup, r)
		}
	}()
	wrap := func(err error) error { return fmt.Errorf("read %s row group %d: %w", p.file, p.rowGroup, err) }
	r, fr, err := openParquet(p.file)
	if err != nil {
		return nil, wrap(err)
	}
	defer r.Close()
	sc := r.MetaData().Schema
	var idx []int
	var fileCols []string
	for _, c := range cols {
		if hive[c] {
			continue
		}
		i := sc.ColumnIndexByName(c)
		if i < 0 {
			return nil, wrap(fmt.Errorf("no column %q", c))
		}
		idx = append(idx, i)
		fileCols = append(fileCols, c)
	}
	n := int(r.MetaData().RowGroup(p.rowGroup).NumRows())
	ht = &hostTable{lens: []int{n}}
	if len(idx) > 0 {
		tbl, err := fr.ReadRowGroups(ctx, idx, []int{p.rowGroup})
		if err != nil {
			return nil, wrap(err)
		}
		defer tbl.Release()
		for j := range fileCols {
			h, err := hostColOfChunks(fileCols[j], tbl.Column(j).Data().Chunks())
			if err != nil {
				return nil, wrap(err)
			}
			if h.vals.Len() != n {
				return nil, wrap(fmt.Errorf("column %q has %d rows, the row group %d", fileCols[j], h.vals.Len(), n))
			}
			ht.cols = append(ht.cols, h)
		}
	}
	var out []*hostCol
	k := 0
	for _, c := range cols {
		if hive[c] && !hiveText[c] {
			v, _ := strconv.ParseInt(p.hive[c], 10, 64)
			vals := make([]int64, n)
			for i := range vals {
				vals[i] = v
			}
			out = append(out, &hostCol{name: c, dt: Int64, vals: dtype.OfInt64(vals), valid: hiveValid(p.hive[c], n)})
			continue
		}
		if hive[c] {
			v := p.hive[c]
			if v == hiveNull {
				v = ""
			}
			h := &hostCol{name: c, dt: Category, heap: heapOf([]string{v}), valid: hiveValid(p.hive[c], n)}
			h.vals, _ = dtype.Of(make([]int32, n))
			out = append(out, h)
			continue
		}
		out = append(out, ht.cols[k])
		k++
	}
	ht.cols = out
	return ht, nil
}

// hiveValid is the validity of n rows of a hive key: all null for the directory of null keys
// (__HIVE_DEFAULT_PARTITION__), else nil.
func hiveValid(v string, n int) []bool {
	if v != hiveNull {
		return nil
	}
	return make([]bool, n)
}

// statsMayPass reports whether some row of a row group may pass every filter, from its
// column statistics (min, max) and hive keys; conditions it cannot judge keep the group.
func statsMayPass(md *metadata.FileMetaData, rg *metadata.RowGroupMetaData, hive map[string]string, filters []*Expr) (bool, error) {
	for _, f := range filters {
		for _, c := range conjuncts(f) {
			if c.kind != "bin" || c.args[0].kind != "col" || c.args[1].kind != "lit" {
				continue
			}
			name, op, lit := c.args[0].name, c.name, c.args[1].lit
			if v, ok := hive[name]; ok {
				if !compareLit(op, v, lit) {
					return false, nil
				}
				continue
			}
			i := md.Schema.ColumnIndexByName(name)
			if i < 0 {
				continue
			}
			cc, err := rg.ColumnChunk(i)
			if err != nil {
				return false, err
			}
			ok, err := cc.StatsSet()
			if err != nil || !ok {
				continue
			}
			st, err := cc.Statistics()
			if err != nil || st == nil || !st.HasMinMax() {
				continue
			}
			var lo, hi any
			switch s := st.(type) {
			case *metadata.Int32Statistics:
				lo, hi = float64(s.Min()), float64(s.Max())
			case *metadata.Int64Statistics:
				lo, hi = float64(s.Min()), float64(s.Max())
			case *metadata.Float32Statistics:
				lo, hi = float64(s.Min()), float64(s.Max())
			case *metadata.Float64Statistics:
				lo, hi = s.Min(), s.Max()
			case *metadata.ByteArrayStatistics:
				lo, hi = string(s.Min()), string(s.Max())
			default:
				continue
			}
			if !rangeMayPass(op, lo, hi, lit) {
				return false, nil
			}
		}
	}
	return true, nil
}

func conjuncts(e *Expr) []*Expr {
	if e.kind == "bin" && e.name == "and" {
		return append(conjuncts(e.args[0]), conjuncts(e.args[1])...)
	}
	return []*Expr{e}
}

func litFloat(v any) (float64, bool) {
	switch x := v.(type) {
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	case int32:
		return float64(x), true
	case float64:
		return x, true
	case float32:
		return float64(x), true
	}
	return 0, false
}

// rangeMayPass reports whether a value in [lo, hi] may satisfy "value op lit".
func rangeMayPass(op string, lo, hi, lit any) bool {
	switch l := lo.(type) {
	case float64:
		if x, ok := litFloat(lit); ok {
			return orderedMayPass(op, l, hi.(float64), x)
		}
	case string:
		if x, ok := lit.(string); ok {
			return orderedMayPass(op, l, hi.(string), x)
		}
	}
	return true
}

// orderedMayPass is rangeMayPass for one ordered type.
func orderedMayPass[T cmp.Ordered](op string, lo, hi, x T) bool {
	switch op {
	case "eq":
		return lo <= x && x <= hi
	case "lt":
		return lo < x
	case "le":
		return lo <= x
	case "gt":
		return hi > x
	case "ge":
		return hi >= x
	}
	return true
}

// compareLit evaluates "hive value op lit" (numbers compare as numbers).
func compareLit(op, v string, lit any) bool {
	if x, ok := litFloat(lit); ok {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return true
		}
		return rangeMayPass(op, f, f, x)
	}
	if s, ok := lit.(string); ok {
		if op == "ne" {
			return v != s
		}
		return rangeMayPass(op, v, v, s)
	}
	return true
}

// ToParquet computes the frame and writes it as Parquet, one row group per partition: to
// one file when path ends in .parquet, else to a directory of part.N.parquet files (one per
// partition). It writes under a temporary name and renames when complete (internal/atomicfile),
// so a failed or killed write never leaves a dataset that looks whole, nor replaces the one at
// path; temporary outputs of killed writes are removed by the next write.
func (f *Frame) ToParquet(path string, opts ...ComputeOption) error {
	_, ht, err := f.host(opts)
	if err != nil {
		return fmt.Errorf("ToParquet %s: %w", path, err)
	}
	if strings.HasSuffix(path, ".parquet") {
		fh, err := atomicfile.Create(path)
		if err != nil {
			return fmt.Errorf("ToParquet %s: %w", path, err)
		}
		defer fh.Abort()
		if err := writeParquet(fh.File, ht, ht.lens); err != nil {
			return fmt.Errorf("ToParquet %s: %w", path, err)
		}
		if err := fh.Commit(); err != nil {
			return fmt.Errorf("ToParquet %s: %w", path, err)
		}
		return nil
	}
	tmp, err := atomicfile.MkdirTemp(path)
	if err != nil {
		return fmt.Errorf("ToParquet %s: %w", path, err)
	}
	defer tmp.Abort()
	at := 0
	for i, l := range ht.lens {
		part := ht.slice(at, at+l)
		at += l
		if err := writeParquetFile(filepath.Join(tmp.Name, fmt.Sprintf("part.%d.parquet", i)), part, []int{l}); err != nil {
			return fmt.Errorf("ToParquet %s: partition %d: %w", path, i, err)
		}
	}
	if err := tmp.Commit(); err != nil {
		return fmt.Errorf("ToParquet %s: %w", path, err)
	}
	return nil
}

// writeParquetFile writes one file of a dataset directory (a temporary one, renamed whole).
func writeParquetFile(name string, ht *hostTable, lens []int) error {
	out, err := os.Create(name)
	if err != nil {
		return err
	}
	err = writeParquet(out, ht, lens)
	if cerr := out.Close(); err == nil {
		err = cerr
	}
	return err
}

// writeParquet writes ht as Parquet to out, one row group per entry of lens. It leaves out
// open: the caller syncs and renames it (atomicfile) or closes it.
func writeParquet(out io.Writer, ht *hostTable, lens []int) error {
	// Only a Writer: pqarrow closes a sink that is an io.Closer.
	out = struct{ io.Writer }{out}
	var w *pqarrow.FileWriter
	at := 0
	if len(lens) == 0 {
		lens = []int{0}
	}
	for _, l := range lens {
		rec, err := recordOf(ht, at, at+l)
		if err != nil {
			return err
		}
		at += l
		if w == nil {
			props := parquet.NewWriterProperties(parquet.WithCompression(compress.Codecs.Snappy), parquet.WithMaxRowGroupLength(int64(max(l, 1)+1<<30)))
			sc, err := withPandasMeta(rec.Schema(), ht)
			if err == nil {
				w, err = pqarrow.NewFileWriter(sc, out, props, pqarrow.NewArrowWriterProperties(pqarrow.WithStoreSchema()))
			}
			if err != nil {
				rec.Release()
				return err
			}
		}
		err = w.Write(rec)
		rec.Release()
		if err != nil {
			return err
		}
	}
	return w.Close()
}

// hiveNull is the directory value of a null partition key, as pyarrow and Hive write it.
const hiveNull = "__HIVE_DEFAULT_PARTITION__"

// ToParquetPartitioned computes the frame and writes it as a hive-partitioned dataset under
// dir, as dask's to_parquet(partition_on=keys) and pyarrow's write_to_dataset do: the rows of
// each combination of the key columns' values go to dir/k1=v1/k2=v2/part.N.parquet (N the
// frame's partition they came from), without the key columns, which the directory names
// hold (a null key as __HIVE_DEFAULT_PARTITION__, other values escaped as URI path segments).
// Keys are integer, string or categorical columns. ReadParquet(dir), pyarrow and pandas read
// the dataset back with the keys as columns. The dataset is written under a temporary name and
// renamed when complete, as ToParquet writes.
func (f *Frame) ToParquetPartitioned(dir string, keys []string, opts ...ComputeOption) error {
	wrap := func(err error) error { return fmt.Errorf("ToParquetPartitioned %s: %w", dir, err) }
	if len(keys) == 0 {
		return wrap(errors.New("no partition keys"))
	}
	for _, k := range keys {
		fd, err := f.field(k)
		if err != nil {
			return wrap(err)
		}
		if fd.DType != String && fd.DType != Category && !fd.DType.IsInteger() {
			return wrap(fmt.Errorf("partition key %q is %s: keys are integer, string or category columns", k, fd.DType))
		}
	}
	_, ht, err := f.host(opts)
	if err != nil {
		return wrap(err)
	}
	var keyCols, dataCols []*hostCol
	for _, c := range ht.cols {
		if slices.Contains(keys, c.name) {
			continue
		}
		dataCols = append(dataCols, c)
	}
	for _, k := range keys {
		keyCols = append(keyCols, ht.cols[slices.IndexFunc(ht.cols, func(c *hostCol) bool { return c.name == k })])
	}
	if len(dataCols) == 0 {
		return wrap(fmt.Errorf("no columns besides the partition keys %s", quoteList(keys)))
	}
	tmp, err := atomicfile.MkdirTemp(dir)
	if err != nil {
		return wrap(err)
	}
	defer tmp.Abort()
	at := 0
	for pi, l := range ht.lens {
		var order []string
		rows := map[string][]int{}
		for i := at; i < at+l; i++ {
			segs := make([]string, len(keyCols))
			for j, c := range keyCols {
				segs[j] = c.name + "=" + hiveValue(c, i)
			}
			p := filepath.Join(segs...)
			if _, ok := rows[p]; !ok {
				order = append(order, p)
			}
			rows[p] = append(rows[p], i)
		}
		at += l
		for _, p := range order {
			sub := &hostTable{lens: []int{len(rows[p])}}
			for _, c := range dataCols {
				sub.cols = append(sub.cols, c.gatherRows(rows[p]))
			}
			d := filepath.Join(tmp.Name, p)
			if err := os.MkdirAll(d, 0o755); err != nil {
				return wrap(err)
			}
			if err := writeParquetFile(filepath.Join(d, fmt.Sprintf("part.%d.parquet", pi)), sub, sub.lens); err != nil {
				return wrap(fmt.Errorf("partition %d, %s: %w", pi, p, err))
			}
		}
	}
	if err := tmp.Commit(); err != nil {
		return wrap(err)
	}
	return nil
}

// hiveValue is row i's key of c as a directory names it.
func hiveValue(c *hostCol, i int) string {
	if !c.isValid(i) {
		return hiveNull
	}
	if c.dt == String || c.dt == Category {
		return url.PathEscape(c.stringAt(i))
	}
	return fmt.Sprint(c.vals.Elem(i))
}
