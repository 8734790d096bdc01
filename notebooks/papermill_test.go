package notebooks_test

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/internal/testenv"
	"github.com/gpunotes/gpunotes/nbrun"
)

// TestPapermillNotebook runs notebook 01 through the real papermill with -p parameters, in a
// Python where `gpunotes install --papermill` put the Go translator, and checks the injected
// cell and the outputs.
func TestPapermillNotebook(t *testing.T) {
	env := testenv.InstallKernel(t)
	py := testenv.PapermillPython(t, env)
	out := filepath.Join(t.TempDir(), "01.ipynb")
	cmd := exec.Command(py, "-m", "papermill", "01-cpu-vs-gpu.ipynb", out,
		"-p", "N", "8000", "-p", "SkipCPU", "false", "-k", "gpunotes", "--no-progress-bar")
	cmd.Env = env
	t.Logf("papermill:\n%s", run(t, cmd, 5*time.Minute))

	nb, err := nbrun.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var injected []string
	for _, c := range nb.Cells {
		if c.HasTag(nbrun.InjectedTag) {
			injected = append(injected, c.Source)
		}
	}
	if len(injected) != 1 || strings.TrimSpace(injected[0]) != "// Parameters\nN = 8000\nSkipCPU = false" {
		t.Fatalf("injected-parameters cells %q, want one that assigns N = 8000 and SkipCPU = false", injected)
	}
	checkNotebook(t, "01-cpu-vs-gpu", out)
	text := joined(outputsOf(t, out), func(c cellOutput) string { return c.text })
	if !strings.Contains(text, "array 8000 x 8000 in chunks of 800 x 800") {
		t.Errorf("the notebook did not run at N = 8000:\n%s", text)
	}
}
