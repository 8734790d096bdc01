package rng

func cpuid(eax, ecx uint32) (a, b, c, d uint32)
func xgetbv() uint32

//go:noescape
func philox8AVX2(lo, hi *[8]uint32, key *[2]uint32, out *[4][8]uint32)

// hasAVX2 reports whether the CPU and OS support AVX2.
var hasAVX2 = func() bool {
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
}()

// philox8 computes eight blocks of stream 0 for counters (lo[i], hi[i]).
func philox8(lo, hi *[8]uint32, key *[2]uint32, out *[4][8]uint32) {
	if hasAVX2 {
		philox8AVX2(lo, hi, key, out)
		return
	}
	philox8Generic(lo, hi, key, out)
}
