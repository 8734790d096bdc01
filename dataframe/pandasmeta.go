package dataframe

import (
	"encoding/json"
	"fmt"
	"runtime/debug"

	"github.com/apache/arrow-go/v18/arrow"
)

// pandasFormatVersion is the pandas release whose "pandas" Parquet metadata the files
// match: the version the interop tests read them back with.
const pandasFormatVersion = "3.1.1"

// pandasColumn is one entry of the metadata's "columns", as pandas' developer guide specifies
// it ("Storing pandas DataFrame objects in Apache Parquet format").
type pandasColumn struct {
	Name       string         `json:"name"`
	FieldName  string         `json:"field_name"`
	PandasType string         `json:"pandas_type"`
	NumpyType  string         `json:"numpy_type"`
	Metadata   map[string]any `json:"metadata"`
}

type pandasMeta struct {
	IndexColumns  []any             `json:"index_columns"`
	ColumnIndexes []any             `json:"column_indexes"`
	Columns       []pandasColumn    `json:"columns"`
	Attributes    map[string]any    `json:"attributes"`
	Creator       map[string]string `json:"creator"`
	PandasVersion string            `json:"pandas_version"`
}

// withPandasMeta returns s with the "pandas" key-value metadata for ht's columns, so that
// pandas restores their dtypes: without it pyarrow maps an integer column with nulls to
// float64 and a bool column with nulls to object. A column with a validity mask is nullable
// (Int64, boolean), as pandas' extension types; partitions of one table agree because
// slices keep the mask. The frame's index is not written (pandas reads a RangeIndex).
func withPandasMeta(s *arrow.Schema, ht *hostTable) (*arrow.Schema, error) {
	m := pandasMeta{
		IndexColumns:  []any{},
		ColumnIndexes: []any{},
		Columns:       make([]pandasColumn, len(ht.cols)),
		Attributes:    map[string]any{},
		Creator:       map[string]string{"library": "gpunotes", "version": moduleVersion()},
		PandasVersion: pandasFormatVersion,
	}
	for i, c := range ht.cols {
		pt, nt, md := pandasTypes(c)
		m.Columns[i] = pandasColumn{Name: c.name, FieldName: c.name, PandasType: pt, NumpyType: nt, Metadata: md}
	}
	b, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("pandas metadata: %w", err)
	}
	keys, vals := []string{"pandas"}, []string{string(b)}
	if old := s.Metadata(); old.Len() > 0 {
		for i, k := range old.Keys() {
			if k != "pandas" {
				keys, vals = append(keys, k), append(vals, old.Values()[i])
			}
		}
	}
	md := arrow.NewMetadata(keys, vals)
	return arrow.NewSchema(s.Fields(), &md), nil
}

// pandasTypes returns a column's pandas_type (the logical type), numpy_type (the dtype
// pandas gives it) and metadata.
func pandasTypes(c *hostCol) (pandasType, numpyType string, md map[string]any) {
	nullable := c.valid != nil
	switch {
	case c.dt == Bool:
		if nullable {
			return "bool", "boolean", nil
		}
		return "bool", "bool", nil
	case c.dt.IsInteger():
		if nullable {
			return string(c.dt), nullableInt(c.dt), nil
		}
		return string(c.dt), string(c.dt), nil
	case c.dt.IsFloat():
		// pandas keeps NaN for missing floats in float64, as it reads its own files.
		return string(c.dt), string(c.dt), nil
	case c.dt.IsDatetime():
		return "datetime", string(c.dt), nil
	case c.dt == String:
		return "unicode", "str", nil
	case c.dt == Category:
		n := 0
		if c.heap != nil {
			n = c.heap.len()
		}
		return "categorical", "int32", map[string]any{"num_categories": n, "ordered": false}
	}
	return "object", "object", nil
}

// nullableInt names pandas' nullable extension type of an integer type: Int64, UInt8, ...
func nullableInt(t DType) string {
	s := string(t)
	if s[0] == 'u' {
		return "UInt" + s[len("uint"):]
	}
	return "I" + s[1:]
}

// moduleVersion is gpunotes' module version, "(devel)" in a build from a checkout.
func moduleVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
