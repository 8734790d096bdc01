// Package widget is Jupyter widgets for Go cells: sliders, text boxes, buttons, drop-downs,
// boxes, an Output that captures callbacks' output, Interact, and custom widgets in the
// anywidget form, all over the Jupyter widget protocol 2.1.0 with the @jupyter-widgets/controls
// 2.0.0 models, so JupyterLab, Notebook 7 and VS Code render them with no extension of ours.
//
// Every widget is a Go value; its methods read and write its traits (Value, SetValue, Get,
// Set), and Observe runs a Go callback of the cell when a trait changes in the page or in Go.
// The kernel serves the comms through Comms (wired by main); without a kernel (gpunotes run)
// widgets keep their state, which State returns for the notebook's metadata.
//
// Output.Capture sends what the code it runs prints (fmt, compiled code, child processes) and
// displays to the Output, as ipywidgets' `with out:`; callbacks registered in a cell write to
// an Output shown in that cell, and Interact's function to its own.
//
// A widget lives while the program reaches it. One that was never displayed, is in no other
// widget's traits and never heard from a page is closed (comm_close) when the garbage
// collector frees it; a displayed one stays until Close, CloseAll or a kernel restart, as
// ipywidgets keeps every widget until close().
//
// Cell types that embed a widget need a second field (`type Counter struct {
// *widget.AnyWidget; clicks int }`): the interpreter cannot build a struct whose only field
// embeds a compiled type with methods, and says so. Shown, such a value is its widget's view;
// hand it to compiled code as a widget.Widget (`var w widget.Widget = c`; a box's variadic
// children need that conversion too).
//
// It sits beside display rather than inside it because it is a vocabulary of its own (about
// forty model types and the protocol) that cells name as `widget.`, as Python names
// ipywidgets beside IPython.display, and display stays the small layer every package imports.
package widget
