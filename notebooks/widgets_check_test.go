package notebooks_test

import (
	"context"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/gpunotes/gpunotes/display/widget"
	"github.com/gpunotes/gpunotes/internal/testenv"
	"github.com/gpunotes/gpunotes/nbrun"
)

func init() {
	checks["16-widgets"] = func(t *testing.T, cells []cellOutput) {
		text := joined(cells, func(c cellOutput) string { return c.text })
		contains(t, "output", text, "f = 5.00, 200 points, energy ", "count is now 1",
			"(expected about 16000000); 64 of 64 chunk tasks", "cluster closed: <nil>")
	}
}

// widgetModels returns the model names of the widget state saved in an executed notebook.
func widgetModels(t *testing.T, path string) map[string]map[string]any {
	t.Helper()
	nb, err := nbrun.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var md map[string]struct {
		VersionMajor int                       `json:"version_major"`
		State        map[string]map[string]any `json:"state"`
	}
	if err := json.Unmarshal(nb.Metadata["widgets"], &md); err != nil {
		t.Fatalf("metadata.widgets: %v (%s)", err, nb.Metadata["widgets"])
	}
	st, ok := md[widget.StateMIME]
	if !ok || st.VersionMajor != 2 {
		t.Fatalf("metadata.widgets has no %s of version 2: %s", widget.StateMIME, nb.Metadata["widgets"])
	}
	byName := map[string]map[string]any{}
	for _, m := range st.State {
		name, _ := m["model_name"].(string)
		s, _ := m["state"].(map[string]any)
		if name == "FloatSliderModel" || byName[name] == nil {
			byName[name] = s
		}
	}
	return byName
}

// TestWidgetStateSaved executes notebook 16 with gpunotes run and with nbconvert and checks
// that both save the widgets' last state in the notebook's metadata.
func TestWidgetStateSaved(t *testing.T) {
	bin := testenv.Binary(t)
	out := filepath.Join(t.TempDir(), "16.ipynb")
	run(t, exec.Command(bin, "run", "16-widgets.ipynb", "-o", out), 5*time.Minute)
	models := widgetModels(t, out)
	if s := models["FloatSliderModel"]; s == nil || s["value"] != 5.0 {
		t.Errorf("gpunotes run saved the frequency slider as %v, want value 5", s)
	}
	for _, name := range []string{"IntSliderModel", "OutputModel", "VBoxModel", "DropdownModel", "AnyModel"} {
		if models[name] == nil {
			t.Errorf("gpunotes run saved no %s", name)
		}
	}
	if testing.Short() {
		return
	}
	py := testenv.Python(t)
	env := testenv.InstallKernel(t)
	dir := t.TempDir()
	cmd := exec.CommandContext(context.Background(), py, "-m", "jupyter", "nbconvert", "--to", "notebook", "--execute",
		"--ExecutePreprocessor.kernel_name=gpunotes", "--ExecutePreprocessor.timeout=300", "--output-dir", dir,
		"--output", "16.ipynb", "16-widgets.ipynb")
	cmd.Env = env
	run(t, cmd, 6*time.Minute)
	models = widgetModels(t, filepath.Join(dir, "16.ipynb"))
	if s := models["FloatSliderModel"]; s == nil || s["value"] != 5.0 {
		t.Errorf("nbconvert saved the frequency slider as %v, want value 5", s)
	}
	if models["AnyModel"] == nil || models["OutputModel"] == nil {
		t.Errorf("nbconvert saved models %v", models)
	}
}
