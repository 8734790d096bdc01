#include "textflag.h"

// func cpuid(eax, ecx uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL eax+0(FP), AX
	MOVL ecx+4(FP), CX
	CPUID
	MOVL AX, a+8(FP)
	MOVL BX, b+12(FP)
	MOVL CX, c+16(FP)
	MOVL DX, d+20(FP)
	RET

// func xgetbv() uint32
TEXT ·xgetbv(SB), NOSPLIT, $0-4
	MOVL $0, CX
	XGETBV
	MOVL AX, ret+0(FP)
	RET

// One Philox round on eight lanes: state Y0..Y3 (c0..c3), multipliers Y8 (M0) and Y9 (M1),
// round keys Y10 (k0) and Y11 (k1). Clobbers Y4..Y7, Y14, Y15.
#define ROUND \
	VPMULUDQ Y8, Y0, Y4 \
	VPSRLQ $32, Y0, Y5 \
	VPMULUDQ Y8, Y5, Y5 \
	VPSLLQ $32, Y5, Y6 \
	VPBLENDD $0xAA, Y6, Y4, Y6 \
	VPSRLQ $32, Y4, Y7 \
	VPBLENDD $0xAA, Y5, Y7, Y7 \
	VPMULUDQ Y9, Y2, Y4 \
	VPSRLQ $32, Y2, Y5 \
	VPMULUDQ Y9, Y5, Y5 \
	VPSLLQ $32, Y5, Y14 \
	VPBLENDD $0xAA, Y14, Y4, Y14 \
	VPSRLQ $32, Y4, Y15 \
	VPBLENDD $0xAA, Y5, Y15, Y15 \
	VPXOR Y15, Y1, Y0 \
	VPXOR Y10, Y0, Y0 \
	VPXOR Y7, Y3, Y2 \
	VPXOR Y11, Y2, Y2 \
	VMOVDQU Y14, Y1 \
	VMOVDQU Y6, Y3

#define BUMP \
	VPADDD Y12, Y10, Y10 \
	VPADDD Y13, Y11, Y11

// func philox8AVX2(lo, hi *[8]uint32, sw *[2]uint32, key *[2]uint32, out *[4][8]uint32)
// Philox4x32-10 of counters (lo[i], hi[i], sw[0], sw[1]) for i < 8; out[w][i] is word w of
// lane i.
TEXT ·philox8AVX2(SB), NOSPLIT, $0-40
	MOVQ lo+0(FP), AX
	MOVQ hi+8(FP), BX
	MOVQ sw+16(FP), SI
	MOVQ key+24(FP), CX
	MOVQ out+32(FP), DX
	VMOVDQU (AX), Y0
	VMOVDQU (BX), Y1
	VPBROADCASTD (SI), Y2
	VPBROADCASTD 4(SI), Y3
	MOVL $0xD2511F53, R8
	MOVQ R8, X8
	VPBROADCASTD X8, Y8
	MOVL $0xCD9E8D57, R8
	MOVQ R8, X9
	VPBROADCASTD X9, Y9
	VPBROADCASTD (CX), Y10
	VPBROADCASTD 4(CX), Y11
	MOVL $0x9E3779B9, R8
	MOVQ R8, X12
	VPBROADCASTD X12, Y12
	MOVL $0xBB67AE85, R8
	MOVQ R8, X13
	VPBROADCASTD X13, Y13
	ROUND
	BUMP
	ROUND
	BUMP
	ROUND
	BUMP
	ROUND
	BUMP
	ROUND
	BUMP
	ROUND
	BUMP
	ROUND
	BUMP
	ROUND
	BUMP
	ROUND
	BUMP
	ROUND
	VMOVDQU Y0, 0(DX)
	VMOVDQU Y1, 32(DX)
	VMOVDQU Y2, 64(DX)
	VMOVDQU Y3, 96(DX)
	VZEROUPPER
	RET

// The Weyl constants, eight lanes each, for BUMP16's memory operands.
DATA weyl0<>+0(SB)/4, $0x9E3779B9
DATA weyl0<>+4(SB)/4, $0x9E3779B9
DATA weyl0<>+8(SB)/4, $0x9E3779B9
DATA weyl0<>+12(SB)/4, $0x9E3779B9
DATA weyl0<>+16(SB)/4, $0x9E3779B9
DATA weyl0<>+20(SB)/4, $0x9E3779B9
DATA weyl0<>+24(SB)/4, $0x9E3779B9
DATA weyl0<>+28(SB)/4, $0x9E3779B9
GLOBL weyl0<>(SB), RODATA|NOPTR, $32
DATA weyl1<>+0(SB)/4, $0xBB67AE85
DATA weyl1<>+4(SB)/4, $0xBB67AE85
DATA weyl1<>+8(SB)/4, $0xBB67AE85
DATA weyl1<>+12(SB)/4, $0xBB67AE85
DATA weyl1<>+16(SB)/4, $0xBB67AE85
DATA weyl1<>+20(SB)/4, $0xBB67AE85
DATA weyl1<>+24(SB)/4, $0xBB67AE85
DATA weyl1<>+28(SB)/4, $0xBB67AE85
GLOBL weyl1<>(SB), RODATA|NOPTR, $32

// One Philox round on eight lanes of state C0..C3 with four temporaries (Y12..Y15), so two
// groups of eight lanes fit the sixteen registers: multipliers Y8 (M0) and Y9 (M1), round keys
// Y10 (k0) and Y11 (k1). The same operations as ROUND, in an order that frees each temporary
// as soon as it is used.
#define ROUND4(C0, C1, C2, C3) \
	VPMULUDQ Y8, C0, Y12 \
	VPSRLQ $32, C0, Y13 \
	VPMULUDQ Y8, Y13, Y13 \
	VPSLLQ $32, Y13, Y14 \
	VPBLENDD $0xAA, Y14, Y12, Y14 \
	VPSRLQ $32, Y12, Y12 \
	VPBLENDD $0xAA, Y13, Y12, Y12 \
	VPMULUDQ Y9, C2, Y13 \
	VPSRLQ $32, C2, Y15 \
	VPMULUDQ Y9, Y15, Y15 \
	VPXOR Y12, C3, C2 \
	VPXOR Y11, C2, C2 \
	VMOVDQU Y14, C3 \
	VPSLLQ $32, Y15, Y12 \
	VPBLENDD $0xAA, Y12, Y13, Y12 \
	VPSRLQ $32, Y13, Y13 \
	VPBLENDD $0xAA, Y15, Y13, Y13 \
	VPXOR Y13, C1, C0 \
	VPXOR Y10, C0, C0 \
	VMOVDQU Y12, C1

#define ROUND16 \
	ROUND4(Y0, Y1, Y2, Y3) \
	ROUND4(Y4, Y5, Y6, Y7)

#define BUMP16 \
	VPADDD weyl0<>(SB), Y10, Y10 \
	VPADDD weyl1<>(SB), Y11, Y11

// func philox16AVX2(lo, hi *[16]uint32, sw *[2]uint32, key *[2]uint32, out *[4][16]uint32)
// Philox4x32-10 of counters (lo[i], hi[i], sw[0], sw[1]) for i < 16, as two interleaved
// groups of eight lanes (one group's rounds wait on multiply latency; two keep the vector
// units busy); out[w][i] is word w of lane i.
TEXT ·philox16AVX2(SB), NOSPLIT, $0-40
	MOVQ lo+0(FP), AX
	MOVQ hi+8(FP), BX
	MOVQ sw+16(FP), SI
	MOVQ key+24(FP), CX
	MOVQ out+32(FP), DX
	VMOVDQU (AX), Y0
	VMOVDQU (BX), Y1
	VPBROADCASTD (SI), Y2
	VPBROADCASTD 4(SI), Y3
	VMOVDQU 32(AX), Y4
	VMOVDQU 32(BX), Y5
	VMOVDQU Y2, Y6
	VMOVDQU Y3, Y7
	MOVL $0xD2511F53, R8
	MOVQ R8, X8
	VPBROADCASTD X8, Y8
	MOVL $0xCD9E8D57, R8
	MOVQ R8, X9
	VPBROADCASTD X9, Y9
	VPBROADCASTD (CX), Y10
	VPBROADCASTD 4(CX), Y11
	ROUND16
	BUMP16
	ROUND16
	BUMP16
	ROUND16
	BUMP16
	ROUND16
	BUMP16
	ROUND16
	BUMP16
	ROUND16
	BUMP16
	ROUND16
	BUMP16
	ROUND16
	BUMP16
	ROUND16
	BUMP16
	ROUND16
	VMOVDQU Y0, 0(DX)
	VMOVDQU Y4, 32(DX)
	VMOVDQU Y1, 64(DX)
	VMOVDQU Y5, 96(DX)
	VMOVDQU Y2, 128(DX)
	VMOVDQU Y6, 160(DX)
	VMOVDQU Y3, 192(DX)
	VMOVDQU Y7, 224(DX)
	VZEROUPPER
	RET
