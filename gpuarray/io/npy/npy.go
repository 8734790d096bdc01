// Package npy reads and writes the header of NumPy's .npy format (versions 1.0, 2.0 and 3.0:
// a magic string, a version, a header length and a Python dict literal with 'descr',
// 'fortran_order' and 'shape', padded so that the data starts 64-byte aligned) and finds the
// members of .npz archives. The data after the header is raw elements, described by
// Header.Type; reading and converting it is the caller's.
package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/gpunotes/gpunotes/gpuarray/io/elem"
)

// Magic starts every .npy file.
const Magic = "\x93NUMPY"

// maxHeader bounds the header length we accept (NumPy itself refuses more than 10000 bytes by
// default; a corrupt length must not make us allocate gigabytes).
const maxHeader = 1 << 20

// Header is what the header of a .npy file says.
type Header struct {
	Type    elem.Type
	Fortran bool  // column-major data
	Shape   []int // () for a scalar
}

// Elems returns the number of elements.
func (h Header) Elems() int64 {
	n := int64(1)
	for _, d := range h.Shape {
		n *= int64(d)
	}
	return n
}

// DataBytes returns the size of the data in bytes.
func (h Header) DataBytes() int64 { return h.Elems() * int64(h.Type.Size) }

// ReadHeader reads the header at the start of r and returns it with the offset of the data.
func ReadHeader(r io.Reader) (Header, int64, error) {
	var pre [10]byte
	if _, err := io.ReadFull(r, pre[:8]); err != nil {
		return Header{}, 0, fmt.Errorf("npy: read magic: %w", noEOF(err))
	}
	if string(pre[:6]) != Magic {
		return Header{}, 0, fmt.Errorf("npy: not a .npy file (magic %q)", pre[:6])
	}
	major := pre[6]
	var hlen, off int64
	switch major {
	case 1:
		if _, err := io.ReadFull(r, pre[8:10]); err != nil {
			return Header{}, 0, fmt.Errorf("npy: read header length: %w", noEOF(err))
		}
		hlen, off = int64(binary.LittleEndian.Uint16(pre[8:10])), 10
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return Header{}, 0, fmt.Errorf("npy: read header length: %w", noEOF(err))
		}
		hlen, off = int64(binary.LittleEndian.Uint32(l[:])), 12
	default:
		return Header{}, 0, fmt.Errorf("npy: unsupported format version %d.%d", major, pre[7])
	}
	if hlen > maxHeader {
		return Header{}, 0, fmt.Errorf("npy: header length %d is larger than %d bytes", hlen, maxHeader)
	}
	// Read as it comes rather than allocated at the declared length first: a file of 12
	// bytes that declares a header of 1 MiB gets an error, not 1 MiB.
	text, err := io.ReadAll(io.LimitReader(r, hlen))
	if err == nil && int64(len(text)) < hlen {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		return Header{}, 0, fmt.Errorf("npy: read header of %d bytes: %w", hlen, noEOF(err))
	}
	h, err := ParseHeader(string(text))
	if err != nil {
		return Header{}, 0, err
	}
	return h, off + hlen, nil
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// ParseHeader parses the dict literal of a header, like
// "{'descr': '<f8', 'fortran_order': False, 'shape': (3, 4), }".
func ParseHeader(text string) (Header, error) {
	p := &lit{s: strings.TrimRight(text, " \n\x00")}
	d, err := p.dict()
	if err != nil {
		return Header{}, fmt.Errorf("npy: header %q: %w", clip(text), err)
	}
	var h Header
	descr, ok := d["descr"].(string)
	if !ok {
		if _, isList := d["descr"].([]any); isList {
			return Header{}, fmt.Errorf("npy: header %q: structured dtypes are not supported", clip(text))
		}
		return Header{}, fmt.Errorf("npy: header %q: no 'descr' string", clip(text))
	}
	if h.Type, err = elem.Parse(descr); err != nil {
		return Header{}, fmt.Errorf("npy: header: %w", err)
	}
	if h.Fortran, ok = d["fortran_order"].(bool); !ok {
		return Header{}, fmt.Errorf("npy: header %q: no 'fortran_order' True or False", clip(text))
	}
	shape, ok := d["shape"].([]any)
	if !ok {
		return Header{}, fmt.Errorf("npy: header %q: no 'shape' tuple", clip(text))
	}
	n := int64(1)
	for _, v := range shape {
		k, ok := v.(int)
		if !ok || k < 0 {
			return Header{}, fmt.Errorf("npy: header %q: shape entries must be non-negative integers", clip(text))
		}
		if k > 0 && n > (1<<62)/int64(k) {
			return Header{}, fmt.Errorf("npy: header %q: shape too large", clip(text))
		}
		n *= int64(k)
		h.Shape = append(h.Shape, k)
	}
	if h.Shape == nil {
		h.Shape = []int{}
	}
	if n > (1<<62)/int64(h.Type.Size) {
		return Header{}, fmt.Errorf("npy: header %q: shape too large", clip(text))
	}
	return h, nil
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:120] + "…"
	}
	return s
}

// lit parses the small subset of Python literals a header uses: a dict with string keys,
// strings, True/False, integers and tuples (or lists) of them.
type lit struct {
	s string
	i int
}

func (p *lit) ws() {
	for p.i < len(p.s) && (p.s[p.i] == ' ' || p.s[p.i] == '\n' || p.s[p.i] == '\t') {
		p.i++
	}
}

func (p *lit) eat(c byte) bool {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *lit) dict() (map[string]any, error) {
	if !p.eat('{') {
		return nil, errors.New("does not start with '{'")
	}
	d := map[string]any{}
	for {
		if p.eat('}') {
			break
		}
		k, err := p.value(0)
		if err != nil {
			return nil, err
		}
		key, ok := k.(string)
		if !ok {
			return nil, errors.New("a key is not a string")
		}
		if !p.eat(':') {
			return nil, fmt.Errorf("no ':' after key %q", key)
		}
		v, err := p.value(0)
		if err != nil {
			return nil, err
		}
		if _, dup := d[key]; dup {
			return nil, fmt.Errorf("key %q twice", key)
		}
		d[key] = v
		if !p.eat(',') {
			if !p.eat('}') {
				return nil, errors.New("no ',' or '}' after a value")
			}
			break
		}
	}
	p.ws()
	if p.i != len(p.s) {
		return nil, fmt.Errorf("text after the dict at byte %d", p.i)
	}
	return d, nil
}

func (p *lit) value(depth int) (any, error) {
	if depth > 8 {
		return nil, errors.New("nested too deeply")
	}
	p.ws()
	if p.i >= len(p.s) {
		return nil, errors.New("ends inside a value")
	}
	switch c := p.s[p.i]; {
	case c == '\'' || c == '"':
		end := strings.IndexByte(p.s[p.i+1:], c)
		if end < 0 {
			return nil, errors.New("unterminated string")
		}
		v := p.s[p.i+1 : p.i+1+end]
		p.i += end + 2
		return v, nil
	case c == '(' || c == '[':
		close := byte(')')
		if c == '[' {
			close = ']'
		}
		p.i++
		var out []any
		for {
			if p.eat(close) {
				return out, nil
			}
			v, err := p.value(depth + 1)
			if err != nil {
				return nil, err
			}
			out = append(out, v)
			if !p.eat(',') {
				if !p.eat(close) {
					return nil, fmt.Errorf("no ',' or '%c' in a sequence", close)
				}
				return out, nil
			}
		}
	case c >= '0' && c <= '9' || c == '-':
		j := p.i + 1
		for j < len(p.s) && p.s[j] >= '0' && p.s[j] <= '9' {
			j++
		}
		k, err := strconv.Atoi(p.s[p.i:j])
		if err != nil {
			return nil, fmt.Errorf("bad integer %q", p.s[p.i:j])
		}
		p.i = j
		if p.i < len(p.s) && p.s[p.i] == 'L' { // Python 2 long
			p.i++
		}
		return k, nil
	case strings.HasPrefix(p.s[p.i:], "True"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "False"):
		p.i += 5
		return false, nil
	}
	return nil, fmt.Errorf("unexpected %q at byte %d", p.s[p.i], p.i)
}

// AppendHeader appends the header of h to b (version 1.0, or 2.0 when the header is longer
// than 65535 bytes), padded so that the data starts at a multiple of 64 bytes, and returns it.
func AppendHeader(b []byte, h Header) []byte {
	var d bytes.Buffer
	fmt.Fprintf(&d, "{'descr': '%s', 'fortran_order': %s, 'shape': (", h.Type, map[bool]string{true: "True", false: "False"}[h.Fortran])
	for i, k := range h.Shape {
		if i > 0 {
			d.WriteString(", ")
		}
		d.WriteString(strconv.Itoa(k))
	}
	if len(h.Shape) == 1 {
		d.WriteByte(',')
	}
	d.WriteString("), }")
	pre := 10
	if d.Len()+1+pre > 65535 {
		pre = 12
	}
	total := pre + d.Len() + 1
	pad := (64 - total%64) % 64
	hlen := d.Len() + pad + 1
	b = append(b, Magic...)
	if pre == 10 {
		b = append(b, 1, 0)
		b = binary.LittleEndian.AppendUint16(b, uint16(hlen))
	} else {
		b = append(b, 2, 0)
		b = binary.LittleEndian.AppendUint32(b, uint32(hlen))
	}
	b = append(b, d.Bytes()...)
	b = append(b, bytes.Repeat([]byte{' '}, pad)...)
	return append(b, '\n')
}
