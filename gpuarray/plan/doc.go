// Package plan turns a gpuarray expression graph into fused chunk tasks that a backend
// (gpuarray/cpu, gpuarray/cuda) or a cluster worker executes, and combines their outputs.
//
// # Stages
//
// A graph is computed in stages. Everything that is a function of the element index alone
// fuses: constants, random numbers, ranges, elementwise operations, and views (slices with any
// step, integer indexing, transposition, broadcasting, rechunking). Materialized inputs (arrays
// from FromSlice or an earlier Compute) are read through views as input blocks. A reduction ends
// a stage: Order lists the reductions a graph needs first, each is planned by Lower into one
// Stage, run, and its result becomes an input of the stages that use it. So does a library
// call (sorts, scans, FFTs, bincounts, the matrix product and solve): its kernel computes the
// fused values, then passes them through the call (Kernel.Call, call.go); a call's further
// operands (the product's panel of b, a solve's right-hand sides) are the tasks' last input
// blocks.
//
// # The fused kernel
//
// A Stage has one Task per chunk and, unless it reads a join (concatenation), one Kernel for
// all of them; a join gives a kernel per combination of pieces (see pieces.go). A reshape
// that cannot be pushed to the leaves reads its operand, computed first, as an Input with
// the new shape. A reshape of an array held off the host (Options.Held) reads the held chunks
// in place where a task's block of the reshape is a box of the array whose elements come in
// the same row-major order (axes split or merged within chunks): the block is the reshape's
// box, and Block.Source the array's (reshape.go); elsewhere Stage.ReshapeReads says why.
//
// Tasks cover the chunks of the kernel's iteration space (Kernel.Shape, the shape of the
// stage's value before any reduction). A Kernel is a list of instructions in
// SSA order; instruction i may use only instructions before it, and Result (the last one) is
// the value. Each instruction yields one value per element o (a global index into the iteration
// space), in its DType; float32 instructions round their float64 result to float32.
//
//	Const   Value everywhere
//	Random  the random array Rand of shape Src at source index s(o) (see gpuarray/rng for the
//	        exact transform; Normal gives P0 + P1*z, Uniform P0 + (P1-P0)*u, Integers
//	        P0 + floor-free multiply-shift into [P0, P1), Exponential P0*e, Gamma P1*g(P0),
//	        Poisson and Binomial counts, Beta(P0, P1) for P0, P1 <= 1)
//	Range   Start + Step*l(o), l(o) the source's row-major linear index (a reshaped range keeps
//	        its source's order); with Exact, the last element of the source is Stop
//	Input   element s(o) of input array Slot, whose values come in Task.Inputs[Slot]
//	Unary   Op(Args[0]); Binary Op(Args[0], Args[1]); Where Args[0] != 0 ? Args[1] : Args[2]
//	Cast    Args[0] rounded to DType
//	Search  the int64 position of Args[0] in the ascending 1-d block at Slot, which every task
//	        reads whole (numpy.searchsorted; Right for after equal values)
//
// Leaves (Random, Range, Input) carry Map: source axis d of the leaf is read at index
// s(o)[d] = Map[d].Off + Map[d].Step*o[Map[d].Axis], or Map[d].Off when Axis is -1. The source
// linear index is therefore affine in o: Linear gives its base and per-axis coefficients, which
// may be negative (reversed slices) or zero (broadcasting). A strided slice of a random array
// thus generates only the elements it keeps. Two Inputs reading one array through different
// maps (x and x.T) are marked as one (Instr.Alias), so a GPU can read them in one order.
//
// An input block may be held in a GPU's memory (Block.Held, in the dtype's own size for a
// float32, bool or 1- to 4-byte integer array persisted there) and read in place by that GPU's
// kernels and library calls. A block spanning several chunks held on one GPU, and a call's
// further operand held there (Options.HeldOperands), is a join (Held.Join): the GPU copies the
// parts of the chunks into one buffer first (PieceCopies); a cluster's workers do the same with
// kept chunks (Block.RefJoin). That buffer counts towards the memory limit (Task.JoinBytes, in
// Task.Bytes) as the block read from host memory would. What is held off the host but read
// from host memory after all is named on the Stage, so a GPU's Path can say so: HostReads (a
// block its GPU could not read where it is held, one spanning chunks held on two GPUs say),
// HostOperands (a call's further operands on several GPUs, or of integers), WholeOnHost (a
// search's sorted array).
//
// A Kernel without Reduce stores its value: the task's Output.Data is the task region,
// row-major. With Reduce, the task reduces its region over Reduce.Axes into partials whose
// Output.Shape is the region's shape with those axes set to 1:
//
//	Sum, Mean         Data = sum
//	Min, Max          Data = minimum or maximum (NaN propagates)
//	ArgMin, ArgMax    Data = value, Aux[0] = index of the first extreme element, flat row-major
//	                  over the reduced axes of the whole iteration space (global, not local)
//	Var, Std          Data = count, Aux[0] = mean, Aux[1] = sum of squared deviations
//
// Stage.Assemble combines partials of the same output chunk in chunk order by a fixed binary
// tree (left half, right half), so a result does not depend on the scheduler, and finishes
// Mean, Var (ddof 0) and Std.
//
// Tasks, Kernels and Outputs are plain data (encoding/gob and encoding/json work), so a
// cluster can ship them to workers. Kernel.Key is a stable text identity of a kernel, for
// caches of compiled code.
package plan
