//go:build !amd64

package rng

// hasAVX2 is false off amd64: the portable path runs.
const hasAVX2 = false

func philox8(lo, hi *[8]uint32, key *[2]uint32, out *[4][8]uint32) {
	philox8Generic(lo, hi, &[2]uint32{}, key, out)
}

func philox8w(lo, hi *[8]uint32, sw *[2]uint32, key *[2]uint32, out *[4][8]uint32) {
	philox8Generic(lo, hi, sw, key, out)
}

func philox16(lo, hi *[16]uint32, sw *[2]uint32, key *[2]uint32, out *[4][16]uint32) {
	philox16Generic(lo, hi, sw, key, out)
}
