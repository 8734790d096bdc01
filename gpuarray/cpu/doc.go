// Package cpu executes planned gpuarray tasks (package gpuarray/plan) on the CPU.
//
// A kernel is compiled into a list of closures, one per instruction, that each fill a short
// vector (BlockLen elements along the innermost axis of the task's region); a block runs them in
// order and then stores or reduces the result vector. So random generation, elementwise
// operations, strided views and the reduction run in one pass over the region, with no array
// larger than a block, and each closure's loop is tight compiled code.
package cpu
