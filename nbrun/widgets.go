package nbrun

import (
	"encoding/json"

	"github.com/gpunotes/gpunotes/display/widget"
)

// storeWidgetState saves the live widgets' state in the notebook's metadata
// (metadata.widgets[application/vnd.jupyter.widget-state+json]), as nbclient does, so the
// executed notebook shows its widgets' last values when opened.
func storeWidgetState(nb *Notebook) {
	st := widget.NotebookState()
	if st == nil {
		return
	}
	b, err := json.Marshal(map[string]any{widget.StateMIME: st})
	if err != nil {
		return
	}
	nb.Metadata["widgets"] = b
}
