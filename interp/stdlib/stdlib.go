// Package stdlib holds the standard-library symbols that yaegi's own table (generated with
// Go 1.22) lacks: the functions, types, constants and variables, and whole packages, that
// Go 1.23 and later added. The files are generated from the toolchain that builds the kernel:
//
//	go generate ./interp/stdlib
//
// Each generated file holds only the names missing from yaegi's table for its package, so the
// session merges these tables into yaegi's (interp.Session does) rather than replacing them.
package stdlib

import "reflect"

// Symbols are the missing symbols, keyed by "importpath/name" as yaegi expects.
var Symbols = map[string]map[string]reflect.Value{}

//go:generate go run ./genstd
