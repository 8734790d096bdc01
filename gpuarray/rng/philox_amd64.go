package rng

import (
	"os"
	"time"
)

func cpuid(eax, ecx uint32) (a, b, c, d uint32)
func xgetbv() uint32

//go:noescape
func philox8AVX2(lo, hi *[8]uint32, sw *[2]uint32, key *[2]uint32, out *[4][8]uint32)

//go:noescape
func philox16AVX2(lo, hi *[16]uint32, sw *[2]uint32, key *[2]uint32, out *[4][16]uint32)

// hasAVX2 reports whether the AVX2 path runs: the CPU and OS support it, and on this machine
// it is faster than the portable path. Some virtual machines run the AVX2 code far slower than
// their cores run the portable code (seen on a GPU host: 108 ns per block against 25 ns
// scalar), so a short calibration at start decides. GPUNOTES_NOAVX2=1 turns it off.
var hasAVX2 = cpuHasAVX2() && os.Getenv("GPUNOTES_NOAVX2") != "1" && avx2Faster()

func cpuHasAVX2() bool {
	maxID, _, _, _ := cpuid(0, 0)
	if maxID < 7 {
		return false
	}
	_, _, c, _ := cpuid(1, 0)
	const osxsave, avx = 1 << 27, 1 << 28
	if c&osxsave == 0 || c&avx == 0 {
		return false
	}
	if xgetbv()&6 != 6 { // XMM and YMM state enabled
		return false
	}
	_, b, _, _ := cpuid(7, 0)
	return b&(1<<5) != 0
}

// avx2Faster times both paths on a few hundred blocks (about 20 us) and keeps the faster.
func avx2Faster() bool {
	var lo, hi [8]uint32
	var sw [2]uint32
	var out [4][8]uint32
	key := [2]uint32{1, 2}
	best := func(f func(lo, hi *[8]uint32, sw *[2]uint32, key *[2]uint32, out *[4][8]uint32)) time.Duration {
		d := time.Duration(1 << 62)
		for r := 0; r < 3; r++ {
			t := time.Now()
			for i := 0; i < 32; i++ {
				lo[0] = uint32(i)
				f(&lo, &hi, &sw, &key, &out)
			}
			d = min(d, time.Since(t))
		}
		return d
	}
	return best(philox8AVX2) <= best(philox8Generic)
}

// philox8 computes eight blocks of stream 0 for counters (lo[i], hi[i]).
func philox8(lo, hi *[8]uint32, key *[2]uint32, out *[4][8]uint32) {
	philox8w(lo, hi, &[2]uint32{}, key, out)
}

// philox8w computes eight blocks for counters (lo[i], hi[i], sw[0], sw[1]): block sw[0] of
// sub-stream sw[1].
func philox8w(lo, hi *[8]uint32, sw *[2]uint32, key *[2]uint32, out *[4][8]uint32) {
	if hasAVX2 {
		philox8AVX2(lo, hi, sw, key, out)
		return
	}
	philox8Generic(lo, hi, sw, key, out)
}

// philox16 computes sixteen blocks for counters (lo[i], hi[i], sw[0], sw[1]): twice philox8w's
// lanes, in about 60% of two calls' time where AVX2 runs (BenchmarkPhilox8).
func philox16(lo, hi *[16]uint32, sw *[2]uint32, key *[2]uint32, out *[4][16]uint32) {
	if hasAVX2 {
		philox16AVX2(lo, hi, sw, key, out)
		return
	}
	philox16Generic(lo, hi, sw, key, out)
}
