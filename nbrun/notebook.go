package nbrun

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Notebook is an nbformat 4 notebook. Metadata is kept as raw JSON so that what this package
// does not interpret survives a read and write unchanged.
type Notebook struct {
	Cells         []*Cell
	Metadata      map[string]json.RawMessage
	NBFormat      int
	NBFormatMinor int
}

// Cell is one notebook cell. Type is "code", "markdown" or "raw".
type Cell struct {
	ID          string
	Type        string
	Metadata    map[string]json.RawMessage
	Source      string
	Attachments json.RawMessage // markdown and raw cells only; nil when absent
	// Outputs and ExecutionCount belong to code cells; ExecutionCount nil is JSON null.
	Outputs        []*Output
	ExecutionCount *int
}

// Output is one output of a code cell. Type is "stream", "display_data", "execute_result" or
// "error"; which other fields are used depends on it, as in nbformat.
type Output struct {
	Type string
	// Stream: Name is "stdout" or "stderr".
	Name string
	Text string
	// Display data and execute results.
	Data           map[string]any
	Metadata       map[string]any
	ExecutionCount *int
	// Errors.
	EName     string
	EValue    string
	Traceback []string
}

// Tags returns the cell's metadata tags.
func (c *Cell) Tags() []string {
	var tags []string
	if raw, ok := c.Metadata["tags"]; ok {
		_ = json.Unmarshal(raw, &tags) // tags of another shape count as none
	}
	return tags
}

// HasTag reports whether the cell carries tag.
func (c *Cell) HasTag(tag string) bool {
	for _, t := range c.Tags() {
		if t == tag {
			return true
		}
	}
	return false
}

// Language returns the notebook's language from kernelspec.language or language_info.name,
// lower-cased; "" when the notebook does not say.
func (nb *Notebook) Language() string {
	var ks struct {
		Language string `json:"language"`
	}
	if raw, ok := nb.Metadata["kernelspec"]; ok && json.Unmarshal(raw, &ks) == nil && ks.Language != "" {
		return strings.ToLower(ks.Language)
	}
	var li struct {
		Name string `json:"name"`
	}
	if raw, ok := nb.Metadata["language_info"]; ok && json.Unmarshal(raw, &li) == nil {
		return strings.ToLower(li.Name)
	}
	return ""
}

// ReadFile reads and parses the notebook at path.
func ReadFile(path string) (*Notebook, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read notebook: %w", err)
	}
	nb, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return nb, nil
}

type rawNotebook struct {
	Cells         []rawCell                  `json:"cells"`
	Metadata      map[string]json.RawMessage `json:"metadata"`
	NBFormat      *int                       `json:"nbformat"`
	NBFormatMinor int                        `json:"nbformat_minor"`
}

type rawCell struct {
	ID             string                     `json:"id"`
	CellType       string                     `json:"cell_type"`
	Metadata       map[string]json.RawMessage `json:"metadata"`
	Source         json.RawMessage            `json:"source"`
	Attachments    json.RawMessage            `json:"attachments"`
	Outputs        []map[string]any           `json:"outputs"`
	ExecutionCount *int                       `json:"execution_count"`
}

// Parse decodes an nbformat 4 notebook. Notebooks older than 4.5 get cell ids, so that what
// is written back is valid 4.5.
func Parse(b []byte) (*Notebook, error) {
	var raw rawNotebook
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return nil, fmt.Errorf("not a notebook (invalid JSON): %w", err)
	}
	if raw.NBFormat == nil {
		return nil, errors.New("not a notebook: no nbformat field")
	}
	if *raw.NBFormat != 4 {
		return nil, fmt.Errorf("nbformat %d is not supported (convert it to nbformat 4 first)", *raw.NBFormat)
	}
	nb := &Notebook{Metadata: raw.Metadata, NBFormat: 4, NBFormatMinor: raw.NBFormatMinor}
	if nb.Metadata == nil {
		nb.Metadata = map[string]json.RawMessage{}
	}
	seen := map[string]bool{}
	for i, rc := range raw.Cells {
		src, err := multiline(rc.Source)
		if err != nil {
			return nil, fmt.Errorf("cell %d: source: %w", i+1, err)
		}
		c := &Cell{ID: rc.ID, Type: rc.CellType, Metadata: rc.Metadata, Source: src}
		if c.Metadata == nil {
			c.Metadata = map[string]json.RawMessage{}
		}
		switch c.Type {
		case "code":
			c.ExecutionCount = rc.ExecutionCount
			for j, ro := range rc.Outputs {
				o, err := parseOutput(ro)
				if err != nil {
					return nil, fmt.Errorf("cell %d output %d: %w", i+1, j+1, err)
				}
				c.Outputs = append(c.Outputs, o)
			}
		case "markdown", "raw":
			if len(rc.Attachments) > 0 && string(rc.Attachments) != "null" {
				c.Attachments = rc.Attachments
			}
		default:
			return nil, fmt.Errorf("cell %d: unknown cell_type %q", i+1, rc.CellType)
		}
		if !validID(c.ID) || seen[c.ID] {
			c.ID = newID(seen)
		}
		seen[c.ID] = true
		nb.Cells = append(nb.Cells, c)
	}
	if nb.NBFormatMinor < 5 {
		nb.NBFormatMinor = 5
	}
	return nb, nil
}

var idRE = regexp.MustCompile(`^[a-zA-Z0-9-_]{1,64}$`)

func validID(id string) bool { return idRE.MatchString(id) }

// newID returns a fresh 8-hex-digit cell id not in seen, as Jupyter makes them.
func newID(seen map[string]bool) string {
	for {
		var b [4]byte
		_, _ = rand.Read(b[:]) // crypto/rand.Read never fails on Linux
		id := hex.EncodeToString(b[:])
		if !seen[id] {
			return id
		}
	}
}

// multiline decodes nbformat's multiline string: a string or an array of strings.
func multiline(raw json.RawMessage) (string, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []string
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("want a string or an array of strings")
	}
	return strings.Join(parts, ""), nil
}

func joinAny(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []any:
		var sb strings.Builder
		for _, p := range x {
			s, ok := p.(string)
			if !ok {
				return "", false
			}
			sb.WriteString(s)
		}
		return sb.String(), true
	}
	return "", false
}

func parseOutput(m map[string]any) (*Output, error) {
	o := &Output{}
	o.Type, _ = m["output_type"].(string)
	switch o.Type {
	case "stream":
		o.Name, _ = m["name"].(string)
		text, ok := joinAny(m["text"])
		if !ok {
			return nil, errors.New("stream text is not a string")
		}
		o.Text = text
	case "display_data", "execute_result":
		data, _ := m["data"].(map[string]any)
		o.Data = map[string]any{}
		for k, v := range data {
			if s, ok := joinAny(v); ok && splitsLines(k) {
				v = s
			}
			o.Data[k] = v
		}
		o.Metadata, _ = m["metadata"].(map[string]any)
		if n, ok := m["execution_count"].(json.Number); ok {
			if i, err := n.Int64(); err == nil {
				c := int(i)
				o.ExecutionCount = &c
			}
		}
	case "error":
		o.EName, _ = m["ename"].(string)
		o.EValue, _ = m["evalue"].(string)
		tb, _ := m["traceback"].([]any)
		for _, l := range tb {
			s, _ := l.(string)
			o.Traceback = append(o.Traceback, s)
		}
	default:
		return nil, fmt.Errorf("unknown output_type %q", o.Type)
	}
	return o, nil
}

// splitsLines reports whether nbformat stores values of this MIME type as lists of lines.
func splitsLines(mime string) bool {
	return strings.HasPrefix(mime, "text/") || mime == "image/svg+xml" || mime == "application/javascript"
}

// lines splits s after each newline, as nbformat writes multiline strings.
func lines(s string) []string {
	out := []string{}
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// Marshal encodes the notebook as nbformat 4.5 JSON the way Jupyter writes it: keys sorted,
// one-space indent, multiline strings as lists of lines, and a final newline.
func (nb *Notebook) Marshal() ([]byte, error) {
	cells := make([]any, 0, len(nb.Cells))
	for _, c := range nb.Cells {
		m := map[string]any{
			"id":        c.ID,
			"cell_type": c.Type,
			"metadata":  rawMap(c.Metadata),
			"source":    lines(c.Source),
		}
		switch c.Type {
		case "code":
			outs := make([]any, 0, len(c.Outputs))
			for _, o := range c.Outputs {
				outs = append(outs, o.jsonValue())
			}
			m["outputs"] = outs
			m["execution_count"] = c.ExecutionCount
		default:
			if c.Attachments != nil {
				m["attachments"] = c.Attachments
			}
		}
		cells = append(cells, m)
	}
	doc := map[string]any{
		"cells":          cells,
		"metadata":       rawMap(nb.Metadata),
		"nbformat":       4,
		"nbformat_minor": nb.NBFormatMinor,
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", " ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("encode notebook: %w", err)
	}
	return buf.Bytes(), nil
}

// rawMap decodes raw metadata so that it is written with sorted keys, as Jupyter writes it.
func rawMap(m map[string]json.RawMessage) map[string]any {
	out := make(map[string]any, len(m))
	for k, raw := range m {
		var v any
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			out[k] = raw // unreachable for metadata that was parsed from JSON
			continue
		}
		out[k] = v
	}
	return out
}

func (o *Output) jsonValue() map[string]any {
	m := map[string]any{"output_type": o.Type}
	switch o.Type {
	case "stream":
		m["name"] = o.Name
		m["text"] = lines(o.Text)
	case "display_data", "execute_result":
		data := map[string]any{}
		for k, v := range o.Data {
			if s, ok := v.(string); ok && splitsLines(k) {
				data[k] = lines(s)
			} else {
				data[k] = v
			}
		}
		m["data"] = data
		md := o.Metadata
		if md == nil {
			md = map[string]any{}
		}
		m["metadata"] = md
		if o.Type == "execute_result" {
			m["execution_count"] = o.ExecutionCount
		}
	case "error":
		m["ename"] = o.EName
		m["evalue"] = o.EValue
		tb := o.Traceback
		if tb == nil {
			tb = []string{}
		}
		m["traceback"] = tb
	}
	return m
}

// CheckWritable reports, before any cell runs, whether WriteFile can write path: the directory
// must take a new file, and a file already there must be writable by us.
func CheckWritable(path string) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".nbrun-check-*")
	if err != nil {
		return fmt.Errorf("cannot write the output notebook in %s: %w", dir, err)
	}
	f.Close()
	os.Remove(f.Name())
	if st, err := os.Stat(path); err == nil {
		if st.IsDir() {
			return fmt.Errorf("output %s is a directory", path)
		}
		g, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return fmt.Errorf("cannot overwrite the output notebook: %w", err)
		}
		g.Close()
	}
	return nil
}

// WriteFile writes the notebook to path atomically: a temporary file in the same directory is
// renamed over path, so a failed write never leaves a half-written notebook. A file it replaces
// keeps its permissions; a new one gets 0644.
func (nb *Notebook) WriteFile(path string) error {
	b, err := nb.Marshal()
	if err != nil {
		return err
	}
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, ".nbrun-*.ipynb")
	if err != nil {
		return fmt.Errorf("write notebook: %w", err)
	}
	tmp := f.Name()
	if _, err := f.Write(b); err != nil {
		f.Close()
		os.Remove(tmp)
		return fmt.Errorf("write notebook: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write notebook: %w", err)
	}
	mode := os.FileMode(0o644)
	if st, err := os.Stat(path); err == nil {
		mode = st.Mode().Perm()
	}
	if err := os.Chmod(tmp, mode); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write notebook: %w", err)
	}
	if err := os.Rename(tmp, path); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write notebook: %w", err)
	}
	return nil
}
