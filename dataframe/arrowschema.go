package dataframe

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
)

// A Parquet file written by arrow (pyarrow, arrow-go) keeps its Arrow schema in the footer's
// "ARROW:schema" entry: an IPC schema message, a flatbuffer. arrow-go (v18.8) sizes the
// message's body, the schema's field list, each field's children and metadata by the counts
// the flatbuffer states, before it reads them: corrupt counts made FuzzReadParquet's process
// allocate 330 GB (a field count), then 34 GB (a body length), and die ("fatal error:
// runtime: out of memory", which no recover catches). The counts are checked here first,
// against the bytes that would hold them.

// maxSchemaDepth bounds the nesting of the stored schema's fields (lists of structs of ...).
const maxSchemaDepth = 64

var errStoredSchema = errors.New("corrupt ARROW:schema metadata")

// checkStoredSchema checks the footer's serialized ARROW:schema as pqarrow decodes it.
func checkStoredSchema(serialized string) error {
	var b []byte
	var err error
	if len(serialized)%4 == 0 {
		b, err = base64.StdEncoding.DecodeString(serialized)
	}
	if len(b) == 0 || err != nil {
		b, err = base64.RawStdEncoding.DecodeString(serialized)
	}
	if err != nil {
		return nil // pqarrow refuses it with its own error
	}
	// IPC framing: 0xFFFFFFFF and a length, or (before 0.15) the length alone.
	if len(b) < 4 {
		return nil
	}
	if binary.LittleEndian.Uint32(b) == 0xFFFFFFFF {
		b = b[4:]
	}
	if len(b) < 4 {
		return nil
	}
	n := int64(int32(binary.LittleEndian.Uint32(b)))
	b = b[4:]
	if n <= 0 || n > int64(len(b)) {
		return nil // arrow-go checks the message length against what it reads
	}
	f := flatbuf(b[:n])
	msg, ok := f.root()
	if !ok {
		return errStoredSchema
	}
	// Message: version 0, header_type 1, header 2 (a Schema when header_type is 1),
	// bodyLength 3: arrow-go allocates the body before it reads it.
	p, ok := f.slot(msg, 3)
	if !ok || p+8 > len(f) {
		return errStoredSchema
	}
	if p != 0 {
		if body := int64(binary.LittleEndian.Uint64(f[p:])); body < 0 || body > int64(len(b))-n {
			return fmt.Errorf("%w: a message body of %d bytes in %d", errStoredSchema, body, int64(len(b))-n)
		}
	}
	if t, ok := f.scalar(msg, 1, 1); !ok || t != 1 {
		return nil // not a schema: arrow-go says so
	}
	schema, ok := f.table(msg, 2)
	if !ok {
		return errStoredSchema
	}
	// Schema: endianness 0, fields 1, custom_metadata 2.
	budget := len(f) / 4 // distinct Field tables take 4 bytes at least; shared ones are refused
	if err := f.fields(schema, 1, 0, &budget); err != nil {
		return err
	}
	if _, ok := f.vector(schema, 2, 4); !ok {
		return errStoredSchema
	}
	return nil
}

// flatbuf reads a flatbuffer, checking every offset and count against its length.
type flatbuf []byte

func (f flatbuf) u32(p int) (int, bool) {
	if p < 0 || p+4 > len(f) {
		return 0, false
	}
	return int(binary.LittleEndian.Uint32(f[p:])), true
}

func (f flatbuf) u16(p int) (int, bool) {
	if p < 0 || p+2 > len(f) {
		return 0, false
	}
	return int(binary.LittleEndian.Uint16(f[p:])), true
}

// root is the position of the root table.
func (f flatbuf) root() (int, bool) {
	t, ok := f.u32(0)
	return t, ok && t < len(f)
}

// slot is the position of field i of the table at t, 0 when the field is absent.
func (f flatbuf) slot(t, i int) (int, bool) {
	so, ok := f.u32(t)
	if !ok {
		return 0, false
	}
	vt := t - int(int32(uint32(so)))
	size, ok := f.u16(vt)
	if !ok || size < 4 {
		return 0, false
	}
	if 4+2*i >= size {
		return 0, true
	}
	off, ok := f.u16(vt + 4 + 2*i)
	if !ok {
		return 0, false
	}
	if off == 0 {
		return 0, true
	}
	return t + off, t+off < len(f)
}

// scalar is the byte-sized field i of the table at t (dflt when absent).
func (f flatbuf) scalar(t, i int, size int) (int, bool) {
	p, ok := f.slot(t, i)
	if !ok || p == 0 {
		return 0, ok
	}
	if p+size > len(f) {
		return 0, false
	}
	return int(f[p]), true
}

// target follows the offset at field i of the table at t (0: absent).
func (f flatbuf) target(t, i int) (int, bool) {
	p, ok := f.slot(t, i)
	if !ok || p == 0 {
		return 0, ok
	}
	off, ok := f.u32(p)
	if !ok || off == 0 || p+off >= len(f) {
		return 0, false
	}
	return p + off, true
}

// table is the table at field i of the table at t (0: absent).
func (f flatbuf) table(t, i int) (int, bool) { return f.target(t, i) }

// vector checks the vector at field i of the table at t, of elements of elem bytes: its count
// must fit in the buffer. It returns the vector's position (0: absent).
func (f flatbuf) vector(t, i, elem int) (int, bool) {
	v, ok := f.target(t, i)
	if !ok || v == 0 {
		return v, ok
	}
	n, ok := f.u32(v)
	if !ok || int64(n)*int64(elem) > int64(len(f)-v-4) {
		return 0, false
	}
	return v, true
}

// fields checks the vector of Field tables at field i of the table at t, and theirs below.
// budget bounds the Field tables visited: tables shared between lists (which arrow-go would
// read once for each, exponentially) exhaust it.
func (f flatbuf) fields(t, i, depth int, budget *int) error {
	if depth > maxSchemaDepth {
		return fmt.Errorf("%w: fields nested deeper than %d", errStoredSchema, maxSchemaDepth)
	}
	v, ok := f.vector(t, i, 4)
	if !ok {
		return fmt.Errorf("%w: a field list longer than its bytes", errStoredSchema)
	}
	if v == 0 {
		return nil
	}
	n, _ := f.u32(v)
	for k := range n {
		if *budget--; *budget < 0 {
			return fmt.Errorf("%w: more fields than its bytes hold", errStoredSchema)
		}
		p := v + 4 + 4*k
		off, _ := f.u32(p)
		field := p + off
		if off == 0 || field >= len(f) {
			return errStoredSchema
		}
		// Field: name 0, nullable 1, type_type 2, type 3, dictionary 4, children 5,
		// custom_metadata 6. A Union type (type_type 14) has its typeIds (int32) at 1.
		if tt, ok := f.scalar(field, 2, 1); !ok {
			return errStoredSchema
		} else if tt == 14 {
			typ, ok := f.table(field, 3)
			if !ok {
				return errStoredSchema
			}
			if typ != 0 {
				if _, ok := f.vector(typ, 1, 4); !ok {
					return fmt.Errorf("%w: a union's type ids longer than their bytes", errStoredSchema)
				}
			}
		}
		if _, ok := f.vector(field, 6, 4); !ok {
			return fmt.Errorf("%w: field metadata longer than its bytes", errStoredSchema)
		}
		if err := f.fields(field, 5, depth+1, budget); err != nil {
			return err
		}
	}
	return nil
}
