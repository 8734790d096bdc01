//go:build !amd64

package cpu

import "github.com/gpunotes/gpunotes/gpuarray/expr"

// Off amd64 there are no vector loops: the Go loops run.

func vsAsm(expr.Op, bool) func(dst, a []float64, s float64) { return nil }

func vvAsm(expr.Op) func(dst, a, b []float64) { return nil }

func cmpAsm(expr.Op) (func(dst []int64, a, b []float64), bool) { return nil, false }

func whereAsm() func(dst []float64, cond []int64, x, y []float64) { return nil }

func roundAsm(expr.Op) func(dst, a []float64) { return nil }
