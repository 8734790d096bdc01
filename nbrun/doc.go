// Package nbrun executes Jupyter notebooks (.ipynb, nbformat 4) headless through an in-process
// Go session, with no Jupyter installed. It reads a notebook, optionally injects parameters
// after the cell tagged "parameters" (as papermill does), runs the code cells in order,
// records their outputs the way a Jupyter client would, and writes nbformat 4.5.
//
// It is what `gpunotes run` uses; the session is anything with interp.Session's Execute.
package nbrun
