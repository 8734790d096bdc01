package dataframe

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	acsv "github.com/apache/arrow-go/v18/arrow/csv"
	"github.com/gpunotes/gpunotes/internal/atomicfile"
)

var defaultNulls = []string{"", "NA", "NaN", "null", "NULL", "N/A", "nan"}

const csvSampleRows = 1000

// ReadCSV reads a CSV file (arrow-go's arrow/csv), one partition per PartitionRows rows
// (default 1<<20). The schema is given (Schema) or inferred from the first 1000 rows now:
// int64, float64, bool, datetime64[us] for DateColumns, else string. The data is read when
// the frame is computed. A field that does not parse names its line and column.
func ReadCSV(path string, opts ...Option) *Frame {
	o := applyOpts(opts)
	if !o.hasNulls {
		o.nulls = defaultNulls
	}
	if o.partRows <= 0 {
		o.partRows = 1 << 20
	}
	header, sample, err := sampleCSV(path, o)
	if err != nil {
		return errFrame(fmt.Errorf("ReadCSV %s: %w", path, err))
	}
	header = csvNames(header)
	var fields []Field
	if len(o.schema) > 0 {
		fields = o.schema
		if len(fields) != len(header) {
			return errFrame(fmt.Errorf("ReadCSV %s: Schema has %d columns, the file %d", path, len(fields), len(header)))
		}
	} else {
		for j, name := range header {
			fields = append(fields, Field{name, inferCSV(sample, j, slices.Contains(o.dates, name), o.nulls)})
		}
	}
	afields := make([]arrow.Field, len(fields))
	for i, fd := range fields {
		at := arrowType(fd.DType)
		if fd.DType == Category {
			at = arrow.BinaryTypes.String
		}
		if at == nil {
			return errFrame(fmt.Errorf("ReadCSV %s: column %q: type %s is not read from CSV", path, fd.Name, fd.DType))
		}
		afields[i] = arrow.Field{Name: fd.Name, Type: at, Nullable: true}
	}
	schema := arrow.NewSchema(afields, nil)
	f := &Frame{what: "read_csv " + path, fields: fields, nparts: -1, nrows: -1}
	f.read = func(rc *runCtx, need map[string]bool) (*table, error) {
		rc.host("read_csv: parsed on the host (arrow-go arrow/csv)")
		ht, err := readCSV(path, schema, fields, o)
		if err != nil {
			return nil, err
		}
		return tableOf(ht)
	}
	if len(o.columns) > 0 {
		return f.Select(o.columns...)
	}
	return f
}

func (o options) csvReader(r io.Reader) *csv.Reader {
	cr := csv.NewReader(r)
	cr.Comma = o.delim
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = false
	return cr
}

func sampleCSV(path string, o options) ([]string, [][]string, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer fh.Close()
	cr := o.csvReader(fh)
	var header []string
	var rows [][]string
	for len(rows) < csvSampleRows {
		rec, err := cr.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, nil, err
		}
		if header == nil && !o.noHeader {
			header = rec
			continue
		}
		rows = append(rows, rec)
	}
	if header == nil {
		if len(rows) == 0 {
			return nil, nil, errors.New("empty file")
		}
		for j := range rows[0] {
			header = append(header, strconv.Itoa(j))
		}
		if len(o.schema) == len(header) {
			for j, fd := range o.schema {
				header[j] = fd.Name
			}
		}
	}
	return header, rows, nil
}

func inferCSV(rows [][]string, j int, date bool, nulls []string) DType {
	if date {
		return DatetimeUS
	}
	isInt, isFloat, isBool, seen := true, true, true, false
	for _, r := range rows {
		if j >= len(r) || slices.Contains(nulls, r[j]) {
			continue
		}
		seen = true
		s := r[j]
		if _, err := strconv.ParseInt(s, 10, 64); err != nil {
			isInt = false
		}
		if _, err := strconv.ParseFloat(s, 64); err != nil {
			isFloat = false
		}
		if l := strings.ToLower(s); l != "true" && l != "false" {
			isBool = false
		}
	}
	switch {
	case !seen:
		return Float64
	case isInt:
		return Int64
	case isFloat:
		return Float64
	case isBool:
		return Bool
	}
	return String
}

func readCSV(path string, schema *arrow.Schema, fields []Field, o options) (*hostTable, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("read_csv %s: %w", path, err)
	}
	defer fh.Close()
	r := acsv.NewReader(fh, schema, acsv.WithComma(o.delim), acsv.WithHeader(!o.noHeader),
		acsv.WithNullReader(true, o.nulls...), acsv.WithChunk(o.partRows))
	defer r.Release()
	var parts []*hostTable
	for r.Next() {
		rec := r.RecordBatch()
		ht := &hostTable{lens: []int{int(rec.NumRows())}}
		for j, fd := range fields {
			h, err := hostColOfArrow(fd.Name, mustType(rec.Column(j).DataType()), rec.Column(j))
			if err != nil {
				return nil, err
			}
			if fd.DType == Category {
				codes, dict := h.heap.encode()
				c := make([]int32, len(codes))
				for i, x := range h.vals.Int64s() {
					c[i] = int32(codes[x])
				}
				h.dt, h.heap = Category, dict
				h.vals = primitive(c, len(c))
			}
			ht.cols = append(ht.cols, h)
		}
		parts = append(parts, ht)
	}
	if err := r.Err(); err != nil {
		if loc := locateCSVError(path, fields, o); loc != "" {
			return nil, fmt.Errorf("read_csv %s: %s: %w", path, loc, err)
		}
		return nil, fmt.Errorf("read_csv %s: %w", path, err)
	}
	if len(parts) == 0 {
		return emptyHost(fields)
	}
	ht, err := concatHost(parts)
	if err != nil {
		return nil, err
	}
	ht.rows = rowsArange(ht.lens)
	return ht, nil
}

func mustType(t arrow.DataType) DType {
	dt, _ := dtypeOfArrow(t)
	return dt
}

func emptyHost(fields []Field) (*hostTable, error) {
	f := emptyFrame(&Frame{fields: fields})
	if f.err != nil {
		return nil, f.err
	}
	rc, err := newRun(nil)
	if err != nil {
		return nil, err
	}
	t, err := f.read(rc, nil)
	if err != nil {
		return nil, err
	}
	return hostOf(t)
}

// csvNames makes a header's names unique as pandas does: an empty name becomes "Unnamed: J"
// (J its column), a repeated one "name.K" (FuzzReadCSV: the header "," made a frame of two
// columns named "" whose computation dereferenced nil).
func csvNames(header []string) []string {
	out := make([]string, len(header))
	inHeader := map[string]bool{}
	for _, name := range header {
		inHeader[name] = true
	}
	used := map[string]bool{}
	for j, name := range header {
		if name == "" {
			name = "Unnamed: " + strconv.Itoa(j)
		}
		if used[name] {
			// A new name is none of the header's (pandas 3: "a,a,a.1" reads as a, a.2, a.1).
			base := name
			for k := 1; used[name] || inHeader[name]; k++ {
				name = base + "." + strconv.Itoa(k)
			}
		}
		used[name] = true
		out[j] = name
	}
	return out
}

// locateCSVError finds the first field that does not parse as its column's type and says
// where: "line L, column C (name): value".
func locateCSVError(path string, fields []Field, o options) string {
	fh, err := os.Open(path)
	if err != nil {
		return ""
	}
	defer fh.Close()
	cr := o.csvReader(fh)
	first := true
	for {
		rec, err := cr.Read()
		if err == io.EOF {
			return ""
		}
		line, _ := cr.FieldPos(0)
		if err != nil {
			return fmt.Sprintf("line %d: %v", line, err)
		}
		if first && !o.noHeader {
			first = false
			continue
		}
		if len(rec) != len(fields) {
			return fmt.Sprintf("line %d: %d fields, want %d", line, len(rec), len(fields))
		}
		for j, s := range rec {
			if slices.Contains(o.nulls, s) {
				continue
			}
			if !parsesAs(s, fields[j].DType) {
				l, c := cr.FieldPos(j)
				return fmt.Sprintf("line %d, column %d (%q): %q is not %s", l, c, fields[j].Name, s, fields[j].DType)
			}
		}
	}
}

func parsesAs(s string, dt DType) bool {
	var err error
	switch {
	case dt.IsInteger():
		_, err = strconv.ParseInt(s, 10, 64)
	case dt.IsFloat():
		_, err = strconv.ParseFloat(s, 64)
	case dt == Bool:
		_, err = strconv.ParseBool(s)
	case dt.IsDatetime():
		_, _, err = arrow.TimestampFromStringInLocation(s, arrow.Microsecond, time.UTC)
	}
	return err == nil
}

// ToCSV computes the frame and writes it as one CSV file with a header (nulls empty), under a
// temporary name renamed when complete (internal/atomicfile): a failed or killed write leaves
// the file at path as it was, and the next write removes what a killed one left.
func (f *Frame) ToCSV(path string, opts ...ComputeOption) error {
	_, ht, err := f.host(opts)
	if err != nil {
		return fmt.Errorf("ToCSV %s: %w", path, err)
	}
	for i, c := range ht.cols {
		if c.dt == Category {
			d := *c
			pos := make([]int64, c.vals.Len())
			for k, x := range c.vals.Int32s() {
				pos[k] = int64(x)
			}
			d.dt, d.vals = String, primitive(pos, len(pos))
			ht.cols[i] = &d
		}
	}
	fh, err := atomicfile.Create(path)
	if err != nil {
		return fmt.Errorf("ToCSV %s: %w", path, err)
	}
	defer fh.Abort()
	if err := writeCSV(fh.File, ht); err != nil {
		return fmt.Errorf("ToCSV %s: %w", path, err)
	}
	if err := fh.Commit(); err != nil {
		return fmt.Errorf("ToCSV %s: %w", path, err)
	}
	return nil
}

// writeCSV writes ht as CSV to out, left open for its caller to commit.
func writeCSV(out io.Writer, ht *hostTable) error {
	rec, err := recordOf(ht, 0, len(ht.rows))
	if err != nil {
		return err
	}
	defer rec.Release()
	w := acsv.NewWriter(out, rec.Schema(), acsv.WithHeader(true), acsv.WithNullWriter(""))
	if err := w.Write(rec); err != nil {
		return err
	}
	w.Flush()
	return w.Error()
}
