// Hand-written gfx1030 wave32 kernel for the packed-math test (translate_run.rs), assembled by
// clang-14 (llvm-mc). The test computes every expected value from the RDNA2 ISA semantics
// (f16 results from exact integer arithmetic, rounded once).
//
// pk (workgroup 32, any number of groups): lane g = 32 * group + lane reads in[6g .. 6g+6] =
// integer operands v1..v3 and f16 operands v4..v6, runs the VOP3P forms below with op_sel,
// op_sel_hi, neg_lo/neg_hi, clamp and inline constants, and writes out[32g + k] = v(10 + k)
// for k < 16, then the v_fma_mix* results v29..v31 and the integer dot products v32..v37.
	.amdgcn_target "amdgcn-amd-amdhsa--gfx1030"
	.text
	.globl	pk
	.p2align	8
	.type	pk,@function
pk:
	s_load_dwordx4 s[4:7], s[0:1], 0x0
	s_lshl_b32 s3, s2, 5
	v_add_nc_u32_e32 v26, s3, v0
	v_mul_u32_u24_e32 v27, 24, v26
	v_mul_u32_u24_e32 v28, 0x80, v26
	s_waitcnt lgkmcnt(0)
	global_load_dwordx3 v[1:3], v27, s[4:5]
	global_load_dwordx3 v[4:6], v27, s[4:5] offset:12
	s_waitcnt vmcnt(0)
	v_pk_add_u16 v10, v1, v2 clamp
	v_pk_sub_i16 v11, v1, v2 op_sel:[1,0] op_sel_hi:[0,1] clamp
	v_pk_mad_u16 v12, v1, v2, v3 op_sel:[0,1,1] clamp
	v_pk_mad_i16 v13, v1, v2, v3 op_sel_hi:[0,1,0]
	v_pk_lshlrev_b16 v14, v2, v1 op_sel:[1,0]
	v_pk_ashrrev_i16 v15, v3, v1
	v_pk_max_u16 v16, v1, 7
	v_pk_sub_u16 v17, v1, v2 clamp
	v_pk_add_f16 v18, v4, v5 neg_lo:[1,0] neg_hi:[0,1]
	v_pk_mul_f16 v19, v4, v5 op_sel:[0,1] clamp
	v_pk_fma_f16 v20, v4, v5, v6
	v_pk_fma_f16 v21, v4, v5, v6 op_sel_hi:[0,1,1] neg_lo:[0,0,1]
	v_pk_min_f16 v22, v4, v5
	v_pk_max_f16 v23, v4, 1.0
	v_pk_mul_lo_u16 v24, v1, v2 op_sel:[1,1] op_sel_hi:[0,0]
	v_pk_lshrrev_b16 v25, v3, v1
	v_fma_mix_f32 v29, v4, v5, v1 op_sel:[1,0,0] op_sel_hi:[1,1,0]
	v_fma_mix_f32 v30, -v4, |v5|, v6 op_sel:[0,1,1] op_sel_hi:[1,1,1]
	v_mov_b32_e32 v31, v2
	v_fma_mixlo_f16 v31, v4, v5, v6 op_sel_hi:[1,1,1]
	v_fma_mixhi_f16 v31, v4, v5, v6 op_sel:[1,1,1] op_sel_hi:[1,1,1] clamp
	v_dot2_i32_i16 v32, v1, v2, v3 clamp
	v_dot2_u32_u16 v33, v1, v2, v3 clamp
	v_dot4_i32_i8 v34, v1, v2, v3
	v_dot4_u32_u8 v35, v1, v2, v3 clamp
	v_dot8_i32_i4 v36, v1, v2, v3 clamp
	v_dot8_u32_u4 v37, v1, v2, v3
	global_store_dwordx4 v28, v[10:13], s[6:7]
	global_store_dwordx4 v28, v[14:17], s[6:7] offset:16
	global_store_dwordx4 v28, v[18:21], s[6:7] offset:32
	global_store_dwordx4 v28, v[22:25], s[6:7] offset:48
	global_store_dwordx3 v28, v[29:31], s[6:7] offset:64
	global_store_dwordx3 v28, v[32:34], s[6:7] offset:76
	global_store_dwordx3 v28, v[35:37], s[6:7] offset:88
	s_endpgm
	.section	.rodata,#alloc
	.p2align	6
	.amdhsa_kernel pk
		.amdhsa_kernarg_size 16
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_system_sgpr_workgroup_id_x 1
		.amdhsa_next_free_vgpr 32
		.amdhsa_next_free_sgpr 16
		.amdhsa_wavefront_size32 1
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
	.end_amdhsa_kernel
// pkflush (workgroup 32): MODE flushes f16 denormals (FLOAT_DENORM_MODE_16_64 = 0): lane g
// reads in[3g .. 3g+3] as f16 pairs and writes out[3g + k] = add, mul, fma of them.
	.text
	.globl	pkflush
	.p2align	8
	.type	pkflush,@function
pkflush:
	s_load_dwordx4 s[4:7], s[0:1], 0x0
	s_lshl_b32 s3, s2, 5
	v_add_nc_u32_e32 v26, s3, v0
	v_mul_u32_u24_e32 v27, 12, v26
	s_waitcnt lgkmcnt(0)
	global_load_dwordx3 v[4:6], v27, s[4:5]
	s_waitcnt vmcnt(0)
	v_pk_add_f16 v10, v4, v5
	v_pk_mul_f16 v11, v4, v5
	v_pk_fma_f16 v12, v4, v5, v6
	global_store_dwordx3 v27, v[10:12], s[6:7]
	s_endpgm
	.section	.rodata,#alloc
	.p2align	6
	.amdhsa_kernel pkflush
		.amdhsa_kernarg_size 16
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_system_sgpr_workgroup_id_x 1
		.amdhsa_next_free_vgpr 32
		.amdhsa_next_free_sgpr 16
		.amdhsa_wavefront_size32 1
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
		.amdhsa_float_denorm_mode_16_64 0
	.end_amdhsa_kernel
