// Package notebooks holds the example notebooks and builds them from their sources.
//
// Each notebook NAME.ipynb is generated from src/NAME.go.txt, a Go file in the "percent"
// format that jupytext uses: a line "// %% [markdown]" starts a markdown cell whose lines are
// comments ("// text"), a line "// %%" starts a code cell, and "// %% tags=["parameters"]"
// starts a code cell with tags. Regenerate after editing a source:
//
//	go generate ./notebooks
//
// The tests fail when a notebook is stale, and execute every notebook end to end with
// `gpunotes run` and with `jupyter nbconvert --execute`.
package notebooks

//go:generate go run ./gen

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/gpunotes/gpunotes/nbrun"
)

// Build turns a percent-format source into a notebook. name seeds the cell ids, which are
// stable so that regenerating an unchanged source changes nothing.
func Build(name string, src []byte) (*nbrun.Notebook, error) {
	nb := &nbrun.Notebook{NBFormat: 4, NBFormatMinor: 5, Metadata: map[string]json.RawMessage{}}
	ks, _ := json.Marshal(nbrun.GoKernelspec)
	li, _ := json.Marshal(map[string]string{"name": "go", "file_extension": ".go", "mimetype": "text/x-go"})
	nb.Metadata["kernelspec"] = ks
	nb.Metadata["language_info"] = li

	var cur *nbrun.Cell
	var body []string
	flush := func() {
		if cur == nil {
			return
		}
		text := strings.Trim(strings.Join(body, "\n"), "\n")
		cur.Source = text
		nb.Cells = append(nb.Cells, cur)
		cur, body = nil, nil
	}
	for i, line := range strings.Split(string(src), "\n") {
		if rest, ok := strings.CutPrefix(line, "// %%"); ok {
			flush()
			rest = strings.TrimSpace(rest)
			cur = &nbrun.Cell{
				ID:       fmt.Sprintf("%s-%02d", idStem(name), len(nb.Cells)+1),
				Type:     "code",
				Metadata: map[string]json.RawMessage{},
			}
			switch {
			case rest == "[markdown]":
				cur.Type = "markdown"
			case strings.HasPrefix(rest, "tags="):
				var tags []string
				if err := json.Unmarshal([]byte(strings.TrimPrefix(rest, "tags=")), &tags); err != nil {
					return nil, fmt.Errorf("%s:%d: tags: %w", name, i+1, err)
				}
				cur.Metadata["tags"], _ = json.Marshal(tags)
			case rest != "":
				return nil, fmt.Errorf("%s:%d: unknown cell marker %q", name, i+1, line)
			}
			continue
		}
		if cur == nil {
			if strings.TrimSpace(line) == "" {
				continue
			}
			return nil, fmt.Errorf("%s:%d: text before the first cell marker", name, i+1)
		}
		if cur.Type == "markdown" {
			switch {
			case line == "//":
				line = ""
			case strings.HasPrefix(line, "// "):
				line = line[3:]
			case strings.TrimSpace(line) == "":
			default:
				return nil, fmt.Errorf("%s:%d: markdown lines must start with \"// \"", name, i+1)
			}
		}
		body = append(body, line)
	}
	flush()
	return nb, nil
}

func idStem(name string) string {
	stem, _, _ := strings.Cut(name, "-")
	return "nb" + stem
}

// Sources returns the notebook sources in dir/src, by notebook name (without extension).
func Sources(dir string) (map[string][]byte, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "src", "*.go.txt"))
	if err != nil {
		return nil, fmt.Errorf("list notebook sources: %w", err)
	}
	sort.Strings(paths)
	out := map[string][]byte{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("read notebook source: %w", err)
		}
		out[strings.TrimSuffix(filepath.Base(p), ".go.txt")] = b
	}
	return out, nil
}

// Generate builds every notebook of dir/src into dir/NAME.ipynb and returns the names of
// those whose file changed.
func Generate(dir string) ([]string, error) {
	srcs, err := Sources(dir)
	if err != nil {
		return nil, err
	}
	var changed []string
	for name, src := range srcs {
		nb, err := Build(name, src)
		if err != nil {
			return nil, err
		}
		b, err := nb.Marshal()
		if err != nil {
			return nil, err
		}
		path := filepath.Join(dir, name+".ipynb")
		if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, b) {
			continue
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			return nil, fmt.Errorf("write notebook: %w", err)
		}
		changed = append(changed, name)
	}
	sort.Strings(changed)
	return changed, nil
}
