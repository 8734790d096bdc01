package python

import (
	"archive/zip"
	"bufio"
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed gpunotes-papermill/pyproject.toml gpunotes-papermill/gpunotes_papermill/*.py
var files embed.FS

// Papermill is the folder of the gpunotes-papermill package.
const Papermill = "gpunotes-papermill"

// Project is what a wheel needs from pyproject.toml.
type Project struct {
	Name, Version, Description, RequiresPython string
	Dependencies                               []string
	// EntryPoints maps a group to its "name = module:attr" lines.
	EntryPoints map[string][]string
}

// ReadProject reads the [project] table of the embedded package dir's pyproject.toml.
func ReadProject(dir string) (*Project, error) {
	data, err := files.ReadFile(path.Join(dir, "pyproject.toml"))
	if err != nil {
		return nil, fmt.Errorf("read pyproject.toml: %w", err)
	}
	return parseProject(data)
}

// parseProject reads the keys the wheel needs; pyproject.toml keeps them on one line each.
func parseProject(data []byte) (*Project, error) {
	p := &Project{EntryPoints: map[string][]string{}}
	section := ""
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if strings.HasPrefix(line, "[") {
			section = strings.Trim(line, "[]")
			continue
		}
		key, val, ok := strings.Cut(line, "=")
		if !ok {
			return nil, fmt.Errorf("pyproject.toml:%d: want key = value", n)
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch {
		case section == "project":
			if key == "dependencies" {
				for _, item := range strings.Split(strings.Trim(val, "[]"), ",") {
					if item = strings.TrimSpace(item); item != "" {
						s, err := strconv.Unquote(item)
						if err != nil {
							return nil, fmt.Errorf("pyproject.toml:%d: dependency %s: %w", n, item, err)
						}
						p.Dependencies = append(p.Dependencies, s)
					}
				}
				continue
			}
			s, err := strconv.Unquote(val)
			if err != nil {
				return nil, fmt.Errorf("pyproject.toml:%d: %s: %w", n, key, err)
			}
			switch key {
			case "name":
				p.Name = s
			case "version":
				p.Version = s
			case "description":
				p.Description = s
			case "requires-python":
				p.RequiresPython = s
			}
		case strings.HasPrefix(section, "project.entry-points."):
			group, err := strconv.Unquote(strings.TrimPrefix(section, "project.entry-points."))
			if err != nil {
				return nil, fmt.Errorf("pyproject.toml:%d: entry-point group: %w", n, err)
			}
			target, err := strconv.Unquote(val)
			if err != nil {
				return nil, fmt.Errorf("pyproject.toml:%d: entry point %s: %w", n, key, err)
			}
			p.EntryPoints[group] = append(p.EntryPoints[group], key+" = "+target)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if p.Name == "" || p.Version == "" {
		return nil, errors.New("pyproject.toml: [project] needs name and version")
	}
	return p, nil
}

// Wheel builds a pure-Python wheel of the embedded package dir and returns its file name
// (NAME-VERSION-py3-none-any.whl) and contents.
func Wheel(dir string) (string, []byte, error) {
	p, err := ReadProject(dir)
	if err != nil {
		return "", nil, err
	}
	dist := strings.NewReplacer("-", "_", ".", "_").Replace(p.Name)
	info := fmt.Sprintf("%s-%s.dist-info", dist, p.Version)

	type file struct {
		name string
		data []byte
	}
	var out []file
	err = fs.WalkDir(files, dir, func(name string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Base(name) == "pyproject.toml" {
			return err
		}
		data, err := files.ReadFile(name)
		if err != nil {
			return err
		}
		out = append(out, file{strings.TrimPrefix(name, dir+"/"), data})
		return nil
	})
	if err != nil {
		return "", nil, fmt.Errorf("read package %s: %w", dir, err)
	}
	var meta strings.Builder
	fmt.Fprintf(&meta, "Metadata-Version: 2.1\nName: %s\nVersion: %s\n", p.Name, p.Version)
	if p.Description != "" {
		fmt.Fprintf(&meta, "Summary: %s\n", p.Description)
	}
	if p.RequiresPython != "" {
		fmt.Fprintf(&meta, "Requires-Python: %s\n", p.RequiresPython)
	}
	for _, d := range p.Dependencies {
		fmt.Fprintf(&meta, "Requires-Dist: %s\n", d)
	}
	var eps strings.Builder
	groups := make([]string, 0, len(p.EntryPoints))
	for g := range p.EntryPoints {
		groups = append(groups, g)
	}
	sort.Strings(groups)
	for _, g := range groups {
		fmt.Fprintf(&eps, "[%s]\n%s\n\n", g, strings.Join(p.EntryPoints[g], "\n"))
	}
	out = append(out,
		file{info + "/METADATA", []byte(meta.String())},
		file{info + "/WHEEL", []byte("Wheel-Version: 1.0\nGenerator: gpunotes\nRoot-Is-Purelib: true\nTag: py3-none-any\n")},
		file{info + "/entry_points.txt", []byte(eps.String())},
	)

	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	var record strings.Builder
	for _, f := range out {
		w, err := zw.Create(f.name)
		if err != nil {
			return "", nil, err
		}
		if _, err := w.Write(f.data); err != nil {
			return "", nil, err
		}
		sum := sha256.Sum256(f.data)
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.data))
	}
	fmt.Fprintf(&record, "%s/RECORD,,\n", info)
	w, err := zw.Create(info + "/RECORD")
	if err != nil {
		return "", nil, err
	}
	if _, err := w.Write([]byte(record.String())); err != nil {
		return "", nil, err
	}
	if err := zw.Close(); err != nil {
		return "", nil, fmt.Errorf("write wheel: %w", err)
	}
	return fmt.Sprintf("%s-%s-py3-none-any.whl", dist, p.Version), buf.Bytes(), nil
}
