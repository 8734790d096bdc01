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
// It sits beside display rather than inside it because it is a vocabulary of its own (about
// forty model types and the protocol) that cells name as `widget.`, as Python names
// ipywidgets beside IPython.display, and display stays the small layer every package imports.
package widget
