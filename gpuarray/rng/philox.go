package rng

import "math/bits"

// Philox4x32-10 constants (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3", SC'11).
const (
	philoxM0 = 0xD2511F53
	philoxM1 = 0xCD9E8D57
	philoxW0 = 0x9E3779B9
	philoxW1 = 0xBB67AE85
)

// Philox4x32 returns the Philox4x32-10 block for counter c and key k: ten rounds, the key bumped
// by the Weyl constants between rounds.
func Philox4x32(c [4]uint32, k [2]uint32) [4]uint32 {
	x0, x1, x2, x3 := philox(c[0], c[1], c[2], c[3], k[0], k[1])
	return [4]uint32{x0, x1, x2, x3}
}

// philox is Philox4x32-10 on words; it is written out so the compiler keeps everything in
// registers.
func philox(c0, c1, c2, c3, k0, k1 uint32) (uint32, uint32, uint32, uint32) {
	for r := 0; r < 10; r++ {
		if r > 0 {
			k0 += philoxW0
			k1 += philoxW1
		}
		hi0, lo0 := bits.Mul32(philoxM0, c0)
		hi1, lo1 := bits.Mul32(philoxM1, c2)
		c0, c1, c2, c3 = hi1^c1^k0, lo1, hi0^c3^k1, lo0
	}
	return c0, c1, c2, c3
}

// Key is a Philox key: the two key words.
type Key struct{ K0, K1 uint32 }

// KeyOf returns the key for seed and draw: K0 is the low word of seed, K1 its high word plus
// draw (the number of arrays a RandomState drew before this one).
func KeyOf(seed uint64, draw uint32) Key {
	return Key{K0: uint32(seed), K1: uint32(seed>>32) + draw}
}

// Block returns the Philox4x32-10 block of element index idx in stream s: counter
// (idx low word, idx high word, s, 0).
func (k Key) Block(idx uint64, s uint32) (x0, x1, x2, x3 uint32) {
	return philox(uint32(idx), uint32(idx>>32), s, 0, k.K0, k.K1)
}

// block returns block s of sub-stream w of element idx: counter (idx low word, idx high word,
// s, w). Sub-stream 0 is Block.
func (k Key) block(idx uint64, s, w uint32) (x0, x1, x2, x3 uint32) {
	return philox(uint32(idx), uint32(idx>>32), s, w, k.K0, k.K1)
}

func philox8Generic(lo, hi *[8]uint32, sw *[2]uint32, key *[2]uint32, out *[4][8]uint32) {
	for i := 0; i < 8; i++ {
		out[0][i], out[1][i], out[2][i], out[3][i] = philox(lo[i], hi[i], sw[0], sw[1], key[0], key[1])
	}
}

func philox16Generic(lo, hi *[16]uint32, sw *[2]uint32, key *[2]uint32, out *[4][16]uint32) {
	for i := 0; i < 16; i++ {
		out[0][i], out[1][i], out[2][i], out[3][i] = philox(lo[i], hi[i], sw[0], sw[1], key[0], key[1])
	}
}
