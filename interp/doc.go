// Package interp is the Go session behind the kernel: it splits cells into declarations and
// statements, evaluates them in order with yaegi under a per-cell context, captures everything
// written to file descriptors 1 and 2 as stream output, turns a trailing expression into a MIME
// bundle, and answers completion, inspection and is-complete questions.
//
// It imports no package of the project but display: the preloaded packages are injected through
// Options.Symbols (see interp/preload).
package interp
