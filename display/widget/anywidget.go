package widget

// AnyWidget is a custom widget in the anywidget form: an ES module whose default export has
// render({model, el}) (and optionally initialize), with traits of the Go side synced both
// ways; model.send in the module arrives in OnMsg, Send reaches its "msg:custom" listeners.
// It needs anywidget's lab extension in the Jupyter environment, nothing of ours.
//
// A Go type of a cell makes it its own by embedding it:
//
//	type Counter struct{ *widget.AnyWidget }
//	func (c Counter) Count() int { return c.GetInt("count") }
type AnyWidget struct{ *Model }

// anywidgetVersion is the model version range the anywidget front end (0.11) registers.
const anywidgetVersion = "~0.11.*"

// NewAnyWidget makes a custom widget from its ES module source and initial traits; T{"_css":
// ...} adds a stylesheet.
func NewAnyWidget(esm string, traits ...T) *AnyWidget {
	d := T{"_esm": esm, "_anywidget_id": "gpunotes.AnyWidget", "_dom_classes": []any{}, "layout": nil,
		"tabbable": nil, "tooltip": nil}
	return &AnyWidget{newModel("anywidget", anywidgetVersion, "AnyModel", "anywidget", anywidgetVersion, "AnyView", d, traits)}
}
