// Package install writes and removes the gpunotes kernelspec (kernel.json and logos) under
// Jupyter's data-directory rules.
package install
