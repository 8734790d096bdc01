#include "textflag.h"

// func divAVX(dst, a, b []float64)
// dst[i] = a[i] / b[i] for i < len(dst); a and b are at least as long.
TEXT ·divAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX

div8:
	CMPQ AX, BX
	JGE  div1
	VMOVUPD (SI)(AX*8), Y0
	VMOVUPD 32(SI)(AX*8), Y1
	VDIVPD  (DX)(AX*8), Y0, Y0
	VDIVPD  32(DX)(AX*8), Y1, Y1
	VMOVUPD Y0, (DI)(AX*8)
	VMOVUPD Y1, 32(DI)(AX*8)
	ADDQ    $8, AX
	JMP     div8

div1:
	CMPQ  AX, CX
	JGE   divdone
	MOVSD (SI)(AX*8), X0
	DIVSD (DX)(AX*8), X0
	MOVSD X0, (DI)(AX*8)
	INCQ  AX
	JMP   div1

divdone:
	VZEROUPPER
	RET

// func welfordAVX(n, m, m2, v []float64, c, inv float64)
// For i < len(v): n[i] = c; d := v[i] - m[i]; m[i] += d * inv; m2[i] += d * (v[i] - m[i]).
// The same IEEE operations in the same order as the Go loop (no fused multiply-add).
TEXT ·welfordAVX(SB), NOSPLIT, $0-112
	MOVQ n_base+0(FP), DI
	MOVQ m_base+24(FP), SI
	MOVQ m2_base+48(FP), DX
	MOVQ v_base+72(FP), R8
	MOVQ v_len+80(FP), CX
	VBROADCASTSD c+96(FP), Y8
	VBROADCASTSD inv+104(FP), Y9
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-4, BX

wel4:
	CMPQ    AX, BX
	JGE     wel1
	VMOVUPD (R8)(AX*8), Y0 // x
	VMOVUPD (SI)(AX*8), Y1 // m
	VSUBPD  Y1, Y0, Y2     // d = x - m
	VMULPD  Y9, Y2, Y3     // d * inv
	VADDPD  Y3, Y1, Y1     // m + d*inv
	VMOVUPD Y1, (SI)(AX*8)
	VSUBPD  Y1, Y0, Y4     // x - m
	VMULPD  Y4, Y2, Y4     // d * (x - m)
	VADDPD  (DX)(AX*8), Y4, Y4
	VMOVUPD Y4, (DX)(AX*8)
	VMOVUPD Y8, (DI)(AX*8)
	ADDQ    $4, AX
	JMP     wel4

wel1:
	CMPQ  AX, CX
	JGE   weldone
	MOVSD (R8)(AX*8), X0
	MOVSD (SI)(AX*8), X1
	MOVSD X0, X2
	SUBSD X1, X2 // d
	MOVSD X2, X3
	MULSD X9, X3
	ADDSD X3, X1 // m
	MOVSD X1, (SI)(AX*8)
	MOVSD X0, X4
	SUBSD X1, X4
	MULSD X2, X4
	ADDSD (DX)(AX*8), X4
	MOVSD X4, (DX)(AX*8)
	MOVSD X8, (DI)(AX*8)
	INCQ  AX
	JMP   wel1

weldone:
	VZEROUPPER
	RET

// func absAVX(dst, a []float64)
// dst[i] = |a[i]| (the sign bit cleared) for i < len(dst); a is at least as long.
TEXT ·absAVX(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ $0x7fffffffffffffff, AX
	MOVQ AX, X8
	VBROADCASTSD X8, Y8
	XORQ AX, AX
	MOVQ CX, BX
	ANDQ $-8, BX

abs8:
	CMPQ    AX, BX
	JGE     abs1
	VANDPD  (SI)(AX*8), Y8, Y0
	VANDPD  32(SI)(AX*8), Y8, Y1
	VMOVUPD Y0, (DI)(AX*8)
	VMOVUPD Y1, 32(DI)(AX*8)
	ADDQ    $8, AX
	JMP     abs8

abs1:
	CMPQ  AX, CX
	JGE   absdone
	MOVSD (SI)(AX*8), X0
	ANDPD X8, X0
	MOVSD X0, (DI)(AX*8)
	INCQ  AX
	JMP   abs1

absdone:
	VZEROUPPER
	RET
