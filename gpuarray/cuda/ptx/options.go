package ptx

import (
	"cmp"
	"os"
	"strconv"
)

// Options are the generator's measured variants: each field is one GPUNOTES_PTX_* variable of
// the environment, read once, at start, by EnvOptions (the only place that reads them). The
// defaults are the variants measured best; the others stay to be measured again. Tests and
// benchmarks set them with SetOptions.
type Options struct {
	// Inline copies the bodies of the device library's elementwise functions (exp, sin, log, …)
	// into the fused kernels that use them instead of calling them (GPUNOTES_PTX_INLINE=0: calls,
	// for measuring). The kernel and the library are separate modules for the driver's JIT linker,
	// which compiles each on its own: a call between them cannot be inlined, so every element paid
	// the call's ABI (arguments through the parameter space, the callee-saved registers it spills to
	// local memory and loads back) around a dozen floating-point instructions. The copied body is
	// the library's own PTX, instruction for instruction, so the values keep their bits (its
	// float64 immediates read from the constant bank, InlineConst; consecutive bodies' fast paths
	// first, InlineSplit).
	Inline bool

	// InlineSlow copies the ziggurat's slow path (gpn_normal_slow) into the kernels that draw
	// normals instead of calling it (GPUNOTES_PTX_INLINE_SLOW=0: the call, for measuring). A
	// function of another module is compiled apart, with its own registers (116), and the kernel
	// holds the most any function it calls holds: every normal kernel had 116 registers and 2
	// blocks of 256 threads per SM, though its own loop needs far fewer. Copied, the slow path is
	// compiled with the kernel, so a cap on the kernel's registers (MaxNReg) applies to it.
	// Measured on an H100 (N=40000): 105-116 registers uncapped, every row 0.1-0.4 ms faster
	// (exp + sin 17.3 -> 16.95 ms), the same bits.
	InlineSlow bool

	// InlineSplit emits the inlined bodies of consecutive elementwise library calls (exp(x) +
	// sin(x)) fast paths first: each body's straight-line common path, then, after all of them,
	// each body's rest (GPUNOTES_PTX_INLINE_SPLIT=0: each body whole, one after the other). A
	// body's branches end the compiler's basic blocks, so exp's polynomial and sin's could not be
	// interleaved although they are independent: the kernel ran the two FP64 chains one after the
	// other at 4 warps per scheduler, latency-bound. Split, both fast paths are one block.
	// The instructions are the library's, in its order, so the values keep their bits:
	//   - a body that starts straight (gpn_exp, up to its range check) is cut where its first
	//     branch or label is; the rest runs later, unchanged, on the same registers;
	//   - a sin-shaped body (gpn_sin, gpn_cos: an infinity test, the fast Cody-Waite reduction,
	//     the Payne-Hanek call for |x| >= 2^31, the polynomial) runs the lines the library runs
	//     for |x| < 2^31 or NaN as its fast path; for other x, the whole body runs again in its
	//     rest (splitGuardRE: the guard the library itself tests).
	//
	// Measured on an H100 (N=40000, bench/RESULTS.md): with InlineConst, exp + sin 17.06-17.21
	// -> 15.54-15.69 ms (1.47-1.50x the full sum); alone 16.90 (sin's polynomial then still waits
	// for its coefficients' global loads).
	InlineSplit bool

	// InlineConst makes the inlined library bodies read their float64 constants from the kernel
	// module's constant bank instead of moving them in as immediates (GPUNOTES_PTX_INLINE_CONST=0:
	// immediates, as the library). An FP64 immediate whose low word is not zero fits no
	// instruction: the compiler re-materializes each, in every element, as two 32-bit moves; from
	// the constant bank it is one uniform load. The module-local tables that the bodies read
	// through ld.global.nc (sin's and cos's coefficients) are read from a constant-bank copy
	// too, whose latency the compiler schedules for: sin's polynomial then overlaps exp's. Same
	// values, same bits: the constants are the library's words. Measured on an H100 (N=40000):
	// alone, exp + sin 17.1 -> 16.8 ms; with InlineSplit 15.5-15.7; other rows unchanged.
	InlineConst bool

	// RareSkip puts the rests of a group of split bodies behind one branch taken where no
	// lane needs a rest (no exp overflow or underflow, no |x| >= 2^31 for sin): then the lanes run
	// only the rests' common tails; elsewhere the rests run as before, the library's lines
	// unchanged, so the bits stay. GPUNOTES_PTX_RARE_SKIP: "1" (the default) a plain branch on the
	// lane's own predicates, "vote" a warp-uniform branch on their vote (activemask,
	// vote.sync.any), "0" none. ptxas already branches around each rest (a divergent branch with
	// its BSSY and BSYNC, three instructions an element each): one branch for the group takes 166
	// SASS instructions an element on the exp + sin loop against 169, the vote's 168 (and 3-4 more
	// for a group of one body, where the branch gives the same SASS as none).
	// Measured on an H100 (N=40000, bench/RESULTS.md): exp + sin 14.96-15.58 ms -> 14.61-14.80
	// with "1", 14.77-14.98 with "vote"; where(x > 0, x*x, exp(x)) 0.5 ms slower with "vote".
	RareSkip string

	// Pair sets which reductions that defer slow draws in element order (deferredInOrder)
	// compute two of a thread's elements per pass of the element loop, their nodes emitted in
	// turn (pairedInOrder): "0" (the default) none; "auto" those with an inlined split body
	// (InlineSplit: exp(x) + sin(x)); "1" every such reduction (GPUNOTES_PTX_PAIR). Measured on
	// an H100 (N=40000, bench/RESULTS.md): exp + sin 15.64-15.83 ms one a pass, 16.59-16.76 two,
	// the same 112 registers, its two elements' FP64 chains interleaved in the SASS: the loop
	// issues about 222 instructions an element at some 0.68 of the schedulers' one a cycle, so it
	// is bound by issue more than by waiting on results, and the longer loop lost.
	Pair string

	// Defer makes element kernels that draw normals defer the ziggurat's slow path: an element
	// whose draw leaves the fast path (1.5% of draws) is queued and computed after the element loop,
	// with the lanes of a warp that have queued elements computing them together, instead of the
	// warp waiting at every element where any of its 32 lanes draws slowly (38% of a warp's steps
	// with one normal per element, 61% with two). GPUNOTES_PTX_DEFER=0 turns it off, to measure.
	Defer bool

	// DeferAxes defers slow draws in partial reductions (Spec.Kept) too; GPUNOTES_PTX_DEFER_AXES=0
	// turns it off. On an H100 at N=40000 it took the regenerated axis sums and means from
	// 13.7-14.1 ms to 10.2-10.8 ms when it folded the deferred values last; folded in element order
	// (deferredInOrder), an axis reduction of a regenerated array has the bits of the same
	// reduction of the array persisted, which the GPU worker tests compare.
	DeferAxes bool

	// DeferOrder makes reductions that defer slow draws fold their values in element order
	// (deferredInOrder). GPUNOTES_PTX_DEFER_ORDER=0 folds the deferred values last instead, to
	// measure what the order costs (the bits then differ from a reduction of stored data).
	DeferOrder bool

	// DeferCoop makes the lanes of a warp compute their batches' slow elements together
	// (deferredSlowCoop): each lane one of the warp's queued elements, so the warp runs the slow
	// path about once per batch instead of as many times as its lane with the most slow elements.
	// GPUNOTES_PTX_DEFER_COOP=0 leaves each lane to compute its own (coopPays).
	DeferCoop string

	// DeferBatch is how many words of values a reduction's batch holds (deferredInOrder: one
	// word an element, two for complex values) before its slow elements are computed and its
	// values folded in; GPUNOTES_PTX_DEFER_BATCH=N (8 to 256) sets it, to measure. Complex batches
	// hold half the elements, so that a block's batches fit the SM's L1 as a real sum's do (a
	// masked mean's complex batch of 32 elements, 512 bytes a thread, took 15.3-16.0 ms, of 16
	// 13.9-14.1, of 8 15.7, where the real where-sum took 10.9-11.2; H100, N=40000). A longer batch runs the slow path less often (a warp runs it as many
	// times as its lane with the most slow elements in the batch) but holds more values in local
	// memory and unrolls a longer fold. On an H100 at N=40000 (bench/RESULTS.md), sum 13.2, 12.2,
	// 11.9, 14.3 and 19.8 ms for 16, 32, 64, 128 and 256, std along an axis 19.0-19.4, 16.4-16.8,
	// 19.6, 20.9-21.4 and 26.6-27.7 ms: 32 is the best overall (the deferred values folded last,
	// out of order: sum 10.2, std along an axis 16.8-17.3).
	DeferBatch int

	// DeferQueue, when between 1 and the batch length, ends a reduction's batch once it holds
	// that many slow elements (tests set it, to reach that end of a batch and lanes of a warp whose
	// batches end at different elements); 0 (the default) lets the queue hold a whole batch. No
	// variable of the environment sets it.
	DeferQueue int

	// FoldUnroll bounds the words of a batch whose fold is unrolled (loads issued eight at a
	// time, then their values folded in); a longer full batch is folded by a loop over groups of
	// foldGroup values, a thread's last, partial batch by a loop over its values. ptxas issues an
	// unrolled fold's loads all at once, a register pair per word: a complex batch of 32 elements
	// (64 words, the masked mean's sum and count) unrolled took its kernel from 115 to 188
	// registers, one block of 256 threads per SM instead of two (H100, N=40000: 17.9 ms, grouped
	// 15.3-15.7; bench/RESULTS.md). GPUNOTES_PTX_FOLD_UNROLL=N sets it, to measure (0: every full
	// batch in groups: sum 10.47 ms against 10.33-10.37 unrolled).
	FoldUnroll int

	// CountBatch (GPUNOTES_PTX_COUNT_BATCH=1) defers a count's slow draws in batches as a
	// sum's, to measure the warps computing them together against each lane its own queue.
	CountBatch bool

	// CountCvt (GPUNOTES_PTX_COUNT_CVT=1) finds bins by conversions, as before the
	// additions of countAdd (to measure them).
	CountCvt bool

	// KeyParams makes element kernels (no kept axes) take each random leaf's Philox key as a
	// kernel parameter instead of reading it from the task descriptor: the key is the same for
	// every task of a run, and the round keys derived from a parameter are warp-uniform, which
	// the compiler holds in uniform registers, not in 20 registers of each thread.
	// GPUNOTES_PTX_KEYPARAMS=0 turns it off, to measure.
	KeyParams bool

	// RoundKeysInLoop (GPUNOTES_PTX_RKLOOP=1, an experiment) derives the Philox round keys inside
	// each draw instead of holding them in 18 registers through the element loop.
	RoundKeysInLoop bool

	// NormalFold makes the ziggurat's fast path cheaper with the same bits: layer j's k and w
	// come in one 16-byte load from the kernel's own interleaved copy of the tables (gpn_zig_kw;
	// two table addresses cost ptxas eight instructions an element to remake), the draw's sign is
	// set by an integer xor of its sign bit (neg.f64 took an FP64 add and two selects), and a
	// scale of 1 is not multiplied (z * 1 is z); GPUNOTES_PTX_NORMAL_FOLD=0 turns it off, to
	// measure.
	NormalFold bool

	// Mirror lets Lower mark full reductions of f(x, x.T) over a whole square x as mirrored
	// (Spec.Mirror): element (i, j) with i < j reads x[i,j] and x[j,i] once and folds in both
	// f(x[i,j], x[j,i]) and f(x[j,i], x[i,j]), the value at (j, i), whose element then reads
	// nothing. Regenerated, each normal is drawn once instead of twice: on an H100 at N=40000,
	// sum(x + x.T) 20.5 -> 14.3 ms (bench/RESULTS.md). Stored (x persisted), the same kernel reads
	// the task's block of x and the mirrored one, untiled, in the same element order: each task
	// (its place against the diagonal in its descriptor, Task.MirrorBase) adds the same values in
	// the same order regenerated and stored, so their bits are equal (the interpreter proves it,
	// TestMirroredStoredReadSharesTheOrder). GPUNOTES_PTX_MIRROR=0 turns it off, to measure.
	Mirror bool

	// SmallUnroll is the elements per pass when every input is of 1 or 2 bytes (bools, int8,
	// int16, uint8, uint16 held narrow); GPUNOTES_PTX_SMALL_UNROLL=N sets it, to measure.
	SmallUnroll int

	// Pred rewrites the tests of bools selected from a predicate into uses of that predicate
	// (predBools); GPUNOTES_PTX_PRED=0 turns the rewrite off, to measure it.
	Pred bool

	// Welford picks how the kernels of partial (axis) reductions fold a thread's Welford
	// values (GPUNOTES_PTX_WELFORD, for measuring): "div" divides the deviation by the count for
	// each element; "rcp" (the default) multiplies it by the count's reciprocal (rcp.rn, correctly
	// rounded), as the CPU executor does (mean += d * (1/c)): four fewer registers than "div" in
	// the axis kernels. Batches of values merged with one division each (Chan et al.) were
	// measured and dropped: a batch of four held in registers took the axis kernel from 120 to
	// 136 registers and one block per SM (std(axis=0) 19.3 -> 27.2 ms on an H100), pairs gained
	// nothing measurable (bench/RESULTS.md).
	Welford string

	// MaxNReg caps the registers of a kernel that draws normals with its slow path inlined
	// (.maxnreg on the entry; GPUNOTES_PTX_MAXNREG, 0: no cap); MinBlocks asks the compiler to fit
	// that many blocks per SM instead.
	MaxNReg int

	// MinBlocks asks the compiler to fit that many blocks per SM of a kernel with its slow
	// path inlined (.minnctapersm; GPUNOTES_PTX_MINBLOCKS, 0: none). An H100 SM holds 64K registers:
	// 2 blocks of 256 threads up to 128 per thread, 3 up to 80, 4 up to 64. Measured (H100,
	// N=40000, bench/RESULTS.md), no cap is the best: the kernels uncapped hold 105-116 registers,
	// and at 80 (3 blocks) they spill in the element loop, the full sum 10.6 -> 14.6 ms, exp + sin
	// 16.95 -> 17.15; so the default is none, for MaxNReg and MinBlocks.
	MinBlocks int
}

// EnvOptions returns the options the GPUNOTES_PTX_* variables of the environment select.
func EnvOptions() Options {
	return Options{
		Inline:          os.Getenv("GPUNOTES_PTX_INLINE") != "0",
		InlineSlow:      os.Getenv("GPUNOTES_PTX_INLINE_SLOW") != "0",
		InlineSplit:     os.Getenv("GPUNOTES_PTX_INLINE_SPLIT") != "0",
		InlineConst:     os.Getenv("GPUNOTES_PTX_INLINE_CONST") != "0",
		RareSkip:        cmp.Or(os.Getenv("GPUNOTES_PTX_RARE_SKIP"), "1"),
		Pair:            envPair(os.Getenv("GPUNOTES_PTX_PAIR")),
		Defer:           os.Getenv("GPUNOTES_PTX_DEFER") != "0",
		DeferAxes:       os.Getenv("GPUNOTES_PTX_DEFER_AXES") != "0",
		DeferOrder:      os.Getenv("GPUNOTES_PTX_DEFER_ORDER") != "0",
		DeferCoop:       os.Getenv("GPUNOTES_PTX_DEFER_COOP"),
		DeferBatch:      envDeferBatch(os.Getenv("GPUNOTES_PTX_DEFER_BATCH")),
		FoldUnroll:      EnvCount("GPUNOTES_PTX_FOLD_UNROLL", 32),
		CountBatch:      os.Getenv("GPUNOTES_PTX_COUNT_BATCH") == "1",
		CountCvt:        os.Getenv("GPUNOTES_PTX_COUNT_CVT") == "1",
		KeyParams:       os.Getenv("GPUNOTES_PTX_KEYPARAMS") != "0",
		RoundKeysInLoop: os.Getenv("GPUNOTES_PTX_RKLOOP") == "1",
		NormalFold:      os.Getenv("GPUNOTES_PTX_NORMAL_FOLD") != "0",
		Mirror:          os.Getenv("GPUNOTES_PTX_MIRROR") != "0",
		SmallUnroll:     EnvCount("GPUNOTES_PTX_SMALL_UNROLL", narrowUnroll),
		Pred:            os.Getenv("GPUNOTES_PTX_PRED") != "0",
		Welford:         envWelford(os.Getenv("GPUNOTES_PTX_WELFORD")),
		MaxNReg:         EnvCount("GPUNOTES_PTX_MAXNREG", 0),
		MinBlocks:       EnvCount("GPUNOTES_PTX_MINBLOCKS", 0),
	}
}

// opt are the options the generator runs with: EnvOptions at start, SetOptions to change them.
var opt = EnvOptions()

// CurrentOptions returns the options the generator runs with.
func CurrentOptions() Options { return opt }

// SetOptions makes o the options the generator runs with and returns those it ran with. It is
// for tests and benchmarks: it must not run while a kernel is generated, and a runtime that
// caches modules by spec keeps those generated before.
func SetOptions(o Options) Options {
	old := opt
	opt = o
	return old
}

// envDeferBatch reads GPUNOTES_PTX_DEFER_BATCH: 8 to 256 words, 32 otherwise.
func envDeferBatch(v string) int {
	n, err := strconv.Atoi(v)
	if err != nil || n < 8 || n > 256 {
		return 32
	}
	return n
}

// envPair reads GPUNOTES_PTX_PAIR: "auto" or "1", "0" otherwise.
func envPair(v string) string {
	if v == "auto" || v == "1" {
		return v
	}
	return "0"
}

// envWelford reads GPUNOTES_PTX_WELFORD: "div", "rcp" otherwise.
func envWelford(v string) string {
	if v == "div" {
		return v
	}
	return "rcp"
}
