#include "textflag.h"

// Elementwise loops of the fused CPU kernels, four float64 lanes at a time. Each computes the
// same IEEE operation per element as the Go loop it replaces (no fused multiply-add), so
// results never depend on which ran. Lengths are multiples of 4: the Go side does the rest.

// func addVSAVX(dst, a []float64, s float64)
// dst[i] = a[i] + s
TEXT ·addVSAVX(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	VBROADCASTSD s+48(FP), Y8
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VADDPD Y8, Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func mulVSAVX(dst, a []float64, s float64)
// dst[i] = a[i] * s
TEXT ·mulVSAVX(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	VBROADCASTSD s+48(FP), Y8
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VMULPD Y8, Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func subVSAVX(dst, a []float64, s float64)
// dst[i] = a[i] - s
TEXT ·subVSAVX(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	VBROADCASTSD s+48(FP), Y8
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VSUBPD Y8, Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func rsubVSAVX(dst, a []float64, s float64)
// dst[i] = s - a[i]
TEXT ·rsubVSAVX(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	VBROADCASTSD s+48(FP), Y8
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VSUBPD Y0, Y8, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func divVSAVX(dst, a []float64, s float64)
// dst[i] = a[i] / s
TEXT ·divVSAVX(SB), NOSPLIT, $0-56
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	VBROADCASTSD s+48(FP), Y8
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VDIVPD Y8, Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func addVVAVX(dst, a, b []float64)
// dst[i] = a[i] + b[i]
TEXT ·addVVAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VADDPD (DX)(AX*8), Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func subVVAVX(dst, a, b []float64)
// dst[i] = a[i] - b[i]
TEXT ·subVVAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VSUBPD (DX)(AX*8), Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func mulVVAVX(dst, a, b []float64)
// dst[i] = a[i] * b[i]
TEXT ·mulVVAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VMULPD (DX)(AX*8), Y0, Y0
	VMOVUPD Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func cmpEqAVX(dst []int64, a, b []float64)
// dst[i] = 1 if a[i] == b[i] (false on NaN), else 0.
TEXT ·cmpEqAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VCMPPD  $0, (DX)(AX*8), Y0, Y0
	VPSRLQ  $63, Y0, Y0
	VMOVDQU Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func cmpLtAVX(dst []int64, a, b []float64)
// dst[i] = 1 if a[i] < b[i] (false on NaN), else 0.
TEXT ·cmpLtAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VCMPPD  $1, (DX)(AX*8), Y0, Y0
	VPSRLQ  $63, Y0, Y0
	VMOVDQU Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func cmpLeAVX(dst []int64, a, b []float64)
// dst[i] = 1 if a[i] <= b[i] (false on NaN), else 0.
TEXT ·cmpLeAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VCMPPD  $2, (DX)(AX*8), Y0, Y0
	VPSRLQ  $63, Y0, Y0
	VMOVDQU Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func cmpNeAVX(dst []int64, a, b []float64)
// dst[i] = 1 if a[i] != b[i] (true on NaN), else 0.
TEXT ·cmpNeAVX(SB), NOSPLIT, $0-72
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	MOVQ b_base+48(FP), DX
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVUPD (SI)(AX*8), Y0
	VCMPPD  $4, (DX)(AX*8), Y0, Y0
	VPSRLQ  $63, Y0, Y0
	VMOVDQU Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func whereAVX(dst []float64, cond []int64, x, y []float64)
// dst[i] = x[i] where cond[i] != 0, else y[i]: a select of the bits.
TEXT ·whereAVX(SB), NOSPLIT, $0-96
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ cond_base+24(FP), R8
	MOVQ x_base+48(FP), SI
	MOVQ y_base+72(FP), DX
	VPXOR Y9, Y9, Y9
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VMOVDQU   (R8)(AX*8), Y3
	VPCMPEQQ  Y9, Y3, Y3
	VMOVUPD   (SI)(AX*8), Y0
	VBLENDVPD Y3, (DX)(AX*8), Y0, Y0
	VMOVUPD   Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func truncAVX(dst, a []float64)
// dst[i] = math.Trunc(a[i]) (VROUNDPD: NaN, infinities and signed zeros kept, as math.Trunc).
TEXT ·truncAVX(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VROUNDPD $11, (SI)(AX*8), Y0
	VMOVUPD  Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func floorAVX(dst, a []float64)
// dst[i] = math.Floor(a[i]) (VROUNDPD: NaN, infinities and signed zeros kept, as math.Floor).
TEXT ·floorAVX(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VROUNDPD $9, (SI)(AX*8), Y0
	VMOVUPD  Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET

// func ceilAVX(dst, a []float64)
// dst[i] = math.Ceil(a[i]) (VROUNDPD: NaN, infinities and signed zeros kept, as math.Ceil).
TEXT ·ceilAVX(SB), NOSPLIT, $0-48
	MOVQ dst_base+0(FP), DI
	MOVQ dst_len+8(FP), CX
	MOVQ a_base+24(FP), SI
	XORQ AX, AX

loop:
	CMPQ AX, CX
	JGE  done
	VROUNDPD $10, (SI)(AX*8), Y0
	VMOVUPD  Y0, (DI)(AX*8)
	ADDQ $4, AX
	JMP  loop

done:
	VZEROUPPER
	RET
