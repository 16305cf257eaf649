// Hand-written gfx1030 wave32 kernels for the program-counter tests (translate_run.rs),
// assembled by clang-14 (llvm-mc).
//
// pc_value: every lane stores the s_getpc_b64 result as two dwords at out[2 * l]; the test
// expects the code address it passes (push::CODE_BASE) plus the offset after s_getpc_b64.
//
// bad_return: every lane stores 7 at out[l], then s_setpc_b64 jumps to 0x1234, which is no
// return site (the kernel makes no call): fault reason 6 naming 0x1234 and the s_setpc_b64,
// and the store before it kept; the store after it never runs.
	.amdgcn_target "amdgcn-amd-amdhsa--gfx1030"
	.text
	.globl	pc_value
	.p2align	8
	.type	pc_value,@function
pc_value:
	s_load_dwordx2 s[4:5], s[0:1], 0x0
	s_getpc_b64 s[6:7]
	v_lshlrev_b32_e32 v1, 3, v0
	v_mov_b32_e32 v2, s6
	v_mov_b32_e32 v3, s7
	s_waitcnt lgkmcnt(0)
	global_store_dwordx2 v1, v[2:3], s[4:5]
	s_endpgm
	.section	.rodata,#alloc
	.p2align	6
	.amdhsa_kernel pc_value
		.amdhsa_kernarg_size 8
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_next_free_vgpr 8
		.amdhsa_next_free_sgpr 16
		.amdhsa_wavefront_size32 1
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
	.end_amdhsa_kernel
	.text
	.globl	bad_return
	.p2align	8
	.type	bad_return,@function
bad_return:
	s_load_dwordx2 s[4:5], s[0:1], 0x0
	v_lshlrev_b32_e32 v1, 2, v0
	v_mov_b32_e32 v2, 7
	s_waitcnt lgkmcnt(0)
	global_store_dword v1, v2, s[4:5]
	s_movk_i32 s30, 0x1234
	s_mov_b32 s31, 0
	s_setpc_b64 s[30:31]
	v_mov_b32_e32 v2, 9
	global_store_dword v1, v2, s[4:5]
	s_endpgm
	.section	.rodata,#alloc
	.p2align	6
	.amdhsa_kernel bad_return
		.amdhsa_kernarg_size 8
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_next_free_vgpr 8
		.amdhsa_next_free_sgpr 32
		.amdhsa_wavefront_size32 1
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
	.end_amdhsa_kernel
