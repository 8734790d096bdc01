package nbrun_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/internal/testenv"
	"github.com/gpunotes/gpunotes/interp"
	"github.com/gpunotes/gpunotes/interp/preload"
	"github.com/gpunotes/gpunotes/nbrun"
)

// notebookJSON builds an nbformat 4.4 notebook (no cell ids) from cell sources; a source that
// starts with "#md " is a markdown cell, one that starts with "#params\n" is tagged parameters.
func notebookJSON(t *testing.T, lang string, sources ...string) []byte {
	t.Helper()
	var cells []map[string]any
	for _, s := range sources {
		c := map[string]any{"cell_type": "code", "metadata": map[string]any{}, "outputs": []any{}, "execution_count": nil}
		switch {
		case strings.HasPrefix(s, "#md "):
			c = map[string]any{"cell_type": "markdown", "metadata": map[string]any{}}
			s = strings.TrimPrefix(s, "#md ")
		case strings.HasPrefix(s, "#params\n"):
			c["metadata"] = map[string]any{"tags": []string{"parameters"}}
			s = strings.TrimPrefix(s, "#params\n")
		}
		c["source"] = s
		cells = append(cells, c)
	}
	md := map[string]any{}
	if lang != "" {
		md["kernelspec"] = map[string]any{"name": lang + "-kernel", "display_name": lang, "language": lang}
	}
	b, err := json.Marshal(map[string]any{"cells": cells, "metadata": md, "nbformat": 4, "nbformat_minor": 4})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func parse(t *testing.T, b []byte) *nbrun.Notebook {
	t.Helper()
	nb, err := nbrun.Parse(b)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return nb
}

func newSession(t *testing.T) *interp.Session {
	t.Helper()
	s, err := interp.New(interp.Options{Symbols: preload.Symbols, Preload: preload.Packages})
	if err != nil {
		t.Fatalf("interp.New: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// validate checks the file against the nbformat schema with the reference implementation.
func validate(t *testing.T, path string) {
	t.Helper()
	py := testenv.Python(t)
	cmd := exec.Command(py, "-c", `import sys, nbformat
nb = nbformat.read(sys.argv[1], as_version=nbformat.NO_CONVERT)
assert nb.nbformat == 4 and nb.nbformat_minor == 5, (nb.nbformat, nb.nbformat_minor)
nbformat.validate(nb)
print("valid")`, path)
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "valid") {
		t.Fatalf("nbformat rejects %s: %v\n%s", path, err, out)
	}
}

func TestRunRecordsOutputsAndValidates(t *testing.T) {
	nb := parse(t, notebookJSON(t, "go",
		"#md # Title\nSome *markdown*.",
		"import \"fmt\"\nfmt.Println(\"hello\")\nfmt.Println(\"world\")",
		"x := 6\nx * 7",
		"   \n",
		"display.HTML(\"<b>bold</b>\")",
		"h := display.HTML(\"<i>first</i>\")",
		"h.Update(\"<i>second</i>\")",
	))
	res, err := nbrun.Run(context.Background(), nb, newSession(t), nbrun.Options{})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if res.Executed != 5 {
		t.Errorf("Executed = %d, want 5 (the blank cell is skipped)", res.Executed)
	}
	c := nb.Cells
	if got := c[1].Outputs; len(got) != 1 || got[0].Type != "stream" || got[0].Text != "hello\nworld\n" {
		t.Errorf("print cell outputs = %+v, want one merged stdout stream", got)
	}
	if got := c[2].Outputs; len(got) != 1 || got[0].Type != "execute_result" || got[0].Data["text/plain"] != "42" || *got[0].ExecutionCount != 2 {
		t.Errorf("expression cell outputs = %+v, want execute_result 42 with count 2", got)
	}
	if c[3].ExecutionCount != nil || len(c[3].Outputs) != 0 {
		t.Errorf("blank cell ran: count %v outputs %v", c[3].ExecutionCount, c[3].Outputs)
	}
	if got := c[4].Outputs; len(got) != 1 || got[0].Type != "display_data" || got[0].Data["text/html"] != "<b>bold</b>" {
		t.Errorf("display cell outputs = %+v", got)
	}
	if got := c[5].Outputs; len(got) != 1 || got[0].Data["text/html"] != "<i>second</i>" {
		t.Errorf("updated display = %+v, want its content replaced by the later cell's Update", got)
	}
	for i, cell := range c {
		if cell.ID == "" {
			t.Errorf("cell %d has no id after parsing a 4.4 notebook", i)
		}
	}
	path := filepath.Join(t.TempDir(), "out.ipynb")
	if err := nb.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	validate(t, path)
	back, err := nbrun.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Cells[1].Outputs[0].Text != "hello\nworld\n" || back.Cells[0].Source != "# Title\nSome *markdown*." {
		t.Errorf("round trip lost text: %+v / %q", back.Cells[1].Outputs[0], back.Cells[0].Source)
	}
	b, _ := os.ReadFile(path)
	if !strings.Contains(string(b), "\"<b>bold</b>\"") || !strings.Contains(string(b), "\n \"nbformat\": 4,") {
		t.Errorf("written JSON is not in Jupyter's layout (unescaped HTML, one-space indent):\n%s", b)
	}
}

func TestRunStopsAtFirstError(t *testing.T) {
	nb := parse(t, notebookJSON(t, "",
		"a := 1\n_ = a",
		"var m map[string]int\nm[\"k\"] = 1",
		"import \"fmt\"\nfmt.Println(\"not reached\")",
	))
	var progress strings.Builder
	res, err := nbrun.Run(context.Background(), nb, newSession(t), nbrun.Options{Progress: &progress})
	var cf *nbrun.CellFailure
	if !errors.As(err, &cf) {
		t.Fatalf("Run error = %v, want *CellFailure", err)
	}
	if cf.Number != 2 || cf.Count != 3 || cf.Index != 1 || cf.ID != nb.Cells[1].ID {
		t.Errorf("failure = %+v, want code cell 2 of 3", cf)
	}
	if !strings.Contains(err.Error(), "code cell 2 of 3") || !strings.Contains(err.Error(), "nil map") {
		t.Errorf("error message %q does not name the cell and the panic", err)
	}
	if res.Executed != 2 {
		t.Errorf("Executed = %d, want 2", res.Executed)
	}
	outs := nb.Cells[1].Outputs
	if len(outs) != 1 || outs[0].Type != "error" || outs[0].EName == "" || len(outs[0].Traceback) == 0 {
		t.Errorf("failing cell outputs = %+v, want one error output with a traceback", outs)
	}
	if nb.Cells[2].ExecutionCount != nil || len(nb.Cells[2].Outputs) != 0 {
		t.Errorf("cell after the failure ran")
	}
	if !strings.Contains(progress.String(), "[2/3]") || !strings.Contains(progress.String(), "FAILED") {
		t.Errorf("progress = %q", progress.String())
	}
	// Gpunotes metadata is filled in for a notebook that had none.
	if nb.Language() != "go" {
		t.Errorf("Language() = %q after Run, want go", nb.Language())
	}
	path := filepath.Join(t.TempDir(), "failed.ipynb")
	if err := nb.WriteFile(path); err != nil {
		t.Fatal(err)
	}
	validate(t, path)
}

func TestRunInterruptAndTimeout(t *testing.T) {
	sess := newSession(t)
	nb := parse(t, notebookJSON(t, "go", "for {}", "1"))
	start := time.Now()
	_, err := nbrun.Run(context.Background(), nb, sess, nbrun.Options{CellTimeout: 300 * time.Millisecond})
	var cf *nbrun.CellFailure
	if !errors.As(err, &cf) || cf.Number != 1 {
		t.Fatalf("Run error = %v, want the for {} cell to fail", err)
	}
	if el := time.Since(start); el > 2*time.Minute { // a hung timeout, not a slow machine
		t.Errorf("timeout took %v", el)
	}
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(200*time.Millisecond, cancel)
	nb = parse(t, notebookJSON(t, "go", "for {}"))
	if _, err := nbrun.Run(ctx, nb, sess, nbrun.Options{}); !errors.As(err, &cf) {
		t.Fatalf("cancelled Run error = %v, want a cell failure", err)
	}
	if o := nb.Cells[0].Outputs; len(o) != 1 || o[0].Type != "error" {
		t.Errorf("interrupted cell outputs = %+v", o)
	}
}

func TestRunRejectsOtherLanguages(t *testing.T) {
	nb := parse(t, notebookJSON(t, "python", "print(1)"))
	_, err := nbrun.Run(context.Background(), nb, newSession(t), nbrun.Options{})
	if !errors.Is(err, nbrun.ErrLanguage) || !strings.Contains(err.Error(), "python") {
		t.Fatalf("Run on a Python notebook: %v", err)
	}
}

func TestParseErrors(t *testing.T) {
	for name, in := range map[string]string{
		"invalid JSON":   `{"cells": [`,
		"not a notebook": `{"hello": 1}`,
		"nbformat 3":     `{"nbformat": 3, "nbformat_minor": 0, "worksheets": []}`,
		"bad cell type":  `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "weird", "id": "a", "metadata": {}, "source": ""}]}`,
		"bad source":     `{"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [{"cell_type": "code", "id": "a", "metadata": {}, "source": 5, "outputs": []}]}`,
	} {
		if _, err := nbrun.Parse([]byte(in)); err == nil {
			t.Errorf("%s: Parse accepted %s", name, in)
		}
	}
	if _, err := nbrun.ReadFile(filepath.Join(t.TempDir(), "missing.ipynb")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("ReadFile of a missing file: %v", err)
	}
}

func TestParsePreservesAndRepairsIDs(t *testing.T) {
	in := `{"nbformat": 4, "nbformat_minor": 5, "metadata": {"custom": {"n": 12345678901234567890}},
	"cells": [
	 {"cell_type": "code", "id": "keep-me_1", "metadata": {"tags": ["x"]}, "source": ["a\n", "b"], "outputs": [
	   {"output_type": "stream", "name": "stdout", "text": ["x\n", "y"]},
	   {"output_type": "display_data", "data": {"text/plain": ["p\n", "q"], "application/json": {"k": [1, 2]}}, "metadata": {}}
	 ], "execution_count": 3},
	 {"cell_type": "markdown", "id": "keep-me_1", "metadata": {}, "source": "dup id"},
	 {"cell_type": "raw", "id": "bad id!", "metadata": {}, "source": ""}
	]}`
	nb := parse(t, []byte(in))
	if nb.Cells[0].ID != "keep-me_1" || nb.Cells[1].ID == "keep-me_1" || nb.Cells[2].ID == "bad id!" {
		t.Errorf("ids = %q %q %q: want the first kept, the duplicate and the invalid one replaced", nb.Cells[0].ID, nb.Cells[1].ID, nb.Cells[2].ID)
	}
	if nb.Cells[0].Source != "a\nb" || nb.Cells[0].Outputs[0].Text != "x\ny" || nb.Cells[0].Outputs[1].Data["text/plain"] != "p\nq" {
		t.Errorf("multiline strings not joined: %+v", nb.Cells[0])
	}
	if !nb.Cells[0].HasTag("x") {
		t.Errorf("tags lost")
	}
	b, err := nb.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "12345678901234567890") {
		t.Errorf("large number in metadata was not kept exactly:\n%s", b)
	}
	path := filepath.Join(t.TempDir(), "ids.ipynb")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	validate(t, path)
}

func TestInjectParams(t *testing.T) {
	nb := parse(t, notebookJSON(t, "go",
		"#params\nN := 10\nvar Label = \"small\"\nvar Mode string\nvar Scale float64 = 1",
		"import \"fmt\"\nfmt.Println(N, Label, Mode, Scale)",
	))
	params := []nbrun.Param{}
	for _, s := range []string{"N=500000", "Label=full size", "Mode=\"quoted\"", "Scale=2.5e3"} {
		p, err := nbrun.ParseParam(s)
		if err != nil {
			t.Fatal(err)
		}
		params = append(params, p)
	}
	if err := nbrun.InjectParams(nb, params); err != nil {
		t.Fatal(err)
	}
	// A second injection replaces the first rather than adding another cell.
	if err := nbrun.InjectParams(nb, params[:1]); err != nil {
		t.Fatal(err)
	}
	if err := nbrun.InjectParams(nb, params); err != nil {
		t.Fatal(err)
	}
	if len(nb.Cells) != 3 || !nb.Cells[1].HasTag(nbrun.InjectedTag) {
		t.Fatalf("cells after injection: %d, second tagged %v", len(nb.Cells), nb.Cells[1].Tags())
	}
	if _, err := nbrun.Run(context.Background(), nb, newSession(t), nbrun.Options{}); err != nil {
		t.Fatalf("Run: %v\n%s", err, nb.Cells[1].Source)
	}
	if got := nb.Cells[2].Outputs[0].Text; got != "500000 full size quoted 2500\n" {
		t.Errorf("output with parameters = %q", got)
	}

	bad := parse(t, notebookJSON(t, "go", "#params\nN := 1", "N"))
	if err := nbrun.InjectParams(bad, []nbrun.Param{{Name: "M", Value: "2"}}); err == nil || !strings.Contains(err.Error(), "not declared") {
		t.Errorf("unknown parameter: %v", err)
	}
	none := parse(t, notebookJSON(t, "go", "N := 1"))
	if err := nbrun.InjectParams(none, []nbrun.Param{{Name: "N", Value: "2"}}); err == nil || !strings.Contains(err.Error(), "parameters") {
		t.Errorf("no parameters cell: %v", err)
	}
	for _, s := range []string{"=1", "1x=2", "N"} {
		if _, err := nbrun.ParseParam(s); err == nil {
			t.Errorf("ParseParam(%q) accepted", s)
		}
	}
}

func TestRunKeepsNotebookWritable(t *testing.T) {
	nb := parse(t, notebookJSON(t, "go",
		"display.JSON(map[string]any{\"ok\": []int{1, 2}})",
		"display.JSON(map[string]any{\"bad\": make(chan int)})",
		"display.Clear(false)\nimport \"fmt\"\nfmt.Println(\"after clear\")",
	))
	if _, err := nbrun.Run(context.Background(), nb, newSession(t), nbrun.Options{}); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := nb.Cells[0].Outputs[0].Data["application/json"]; got == nil {
		t.Errorf("JSON display lost: %+v", nb.Cells[0].Outputs[0])
	}
	if _, ok := nb.Cells[1].Outputs[0].Data["application/json"]; ok {
		t.Errorf("an unencodable JSON value was kept")
	}
	if o := nb.Cells[2].Outputs; len(o) != 1 || o[0].Text != "after clear\n" {
		t.Errorf("outputs after Clear = %+v", o)
	}
	path := filepath.Join(t.TempDir(), "json.ipynb")
	if err := nb.WriteFile(path); err != nil {
		t.Fatalf("WriteFile: %v", err)
	}
	validate(t, path)
}
