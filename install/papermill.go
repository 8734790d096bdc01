package install

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/gpunotes/gpunotes/python"
)

// JupyterPython returns the Python of the Jupyter environment: the interpreter named by the
// `jupyter` command on PATH (its script's #! line), else $VIRTUAL_ENV's or $CONDA_PREFIX's
// python, else python3 on PATH.
func JupyterPython() (string, error) {
	if j, err := exec.LookPath("jupyter"); err == nil {
		if py := scriptPython(j); py != "" {
			return py, nil
		}
	}
	for _, v := range []string{"VIRTUAL_ENV", "CONDA_PREFIX"} {
		if p := os.Getenv(v); p != "" {
			if py := filepath.Join(p, "bin", "python"); fileExists(py) {
				return py, nil
			}
		}
	}
	py, err := exec.LookPath("python3")
	if err != nil {
		return "", fmt.Errorf("no Python found (no jupyter or python3 on PATH): pass --python: %w", err)
	}
	return py, nil
}

// pipExec matches the second line of pip's /bin/sh trampoline for long interpreter paths.
var pipExec = regexp.MustCompile(`^'''exec' (?:"([^"]+)"|(\S+))`)

// scriptPython reads the interpreter from a console script's first lines.
func scriptPython(script string) string {
	f, err := os.Open(script)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var lines []string
	for len(lines) < 2 && sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if len(lines) == 0 || !strings.HasPrefix(lines[0], "#!") {
		return ""
	}
	fields := strings.Fields(strings.TrimPrefix(lines[0], "#!"))
	if len(fields) > 0 && strings.Contains(filepath.Base(fields[0]), "python") && fileExists(fields[0]) {
		return fields[0]
	}
	if len(lines) == 2 {
		if m := pipExec.FindStringSubmatch(lines[1]); m != nil {
			if py := m[1] + m[2]; fileExists(py) {
				return py
			}
		}
	}
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// PapermillResult says what InstallPapermill did.
type PapermillResult struct {
	Python  string // the interpreter the package went into
	Wheel   string // the wheel's file name
	Warning string // non-empty when papermill itself is missing there
}

// InstallPapermill installs the gpunotes-papermill package (papermill's translator for Go, from
// the binary's embedded copy) into py with pip, offline and without its dependencies. With
// user set and py outside a virtual environment it installs with --user. When papermill is
// importable there it checks that papermill now finds the translator for the gpunotes kernel.
func InstallPapermill(ctx context.Context, py string, user bool) (*PapermillResult, error) {
	name, data, err := python.Wheel(python.Papermill)
	if err != nil {
		return nil, fmt.Errorf("build the gpunotes-papermill wheel: %w", err)
	}
	dir, err := os.MkdirTemp("", "gpunotes-wheel")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	whl := filepath.Join(dir, name)
	if err := os.WriteFile(whl, data, 0o644); err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	args := []string{"-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--force-reinstall", "--disable-pip-version-check"}
	if user {
		out, err := exec.CommandContext(ctx, py, "-c", "import sys; print(sys.prefix != sys.base_prefix)").Output()
		if err != nil {
			return nil, fmt.Errorf("run %s: %w", py, err)
		}
		if strings.TrimSpace(string(out)) == "False" {
			args = append(args, "--user")
		}
	}
	cmd := exec.CommandContext(ctx, py, append(args, whl)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("pip install %s into %s: %w\n%s", name, py, err, bytes.TrimSpace(out))
	}
	res := &PapermillResult{Python: py, Wheel: name}
	if exec.CommandContext(ctx, py, "-c", "import papermill").Run() != nil {
		res.Warning = fmt.Sprintf("papermill is not installed in %s; install it there (%s -m pip install papermill)", py, py)
		return res, nil
	}
	check := `from papermill.translators import papermill_translators as t; t.find_translator("gpunotes", "go")`
	if out, err := exec.CommandContext(ctx, py, "-c", check).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("papermill in %s does not find the Go translator after the install: %w\n%s", py, err, bytes.TrimSpace(out))
	}
	return res, nil
}
