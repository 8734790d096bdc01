// Package expr is the lazy expression graph of gpuarray: node kinds, dtypes, and the rules that
// give every node its shape and chunk grid (broadcasting, slicing, transposition, reduction,
// rechunking). Building a node checks its inputs and returns an error that names the shapes or
// values involved; nothing is computed here. It imports nothing of the project.
package expr
