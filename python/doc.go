// Package python holds the Python packages that ship with gpunotes (gpunotes-papermill, the
// papermill translator for Go) and builds wheels of them, so that a gpunotes binary installed on
// its own can install them into a Jupyter environment with pip, offline and with no build backend.
package python
