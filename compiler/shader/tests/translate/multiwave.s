// Hand-written gfx1030 wave32 kernels for the multi-wave tests (translate_run.rs), assembled
// by clang-14 (llvm-mc); OpenCL C cannot state them without undefined behaviour.
//
// rounds (workgroup 96 = 3 waves): every lane writes lds[l] = l + 1000 * group; s_barrier;
// wave 2 ends; waves 0 and 1 write lds[96 + l] = 3 * lds[(l + 32) % 96] and meet at two
// different s_barrier instructions (wave 0 at one, wave 1 at the other) while wave 2 has
// ended; then out[64 * group + l] = lds[96 + (l ^ 32)] + 7.
//
// alias (workgroup 64 = 2 waves): instructions that read an SGPR which their lane region
// also writes as a lane mask. v_mad_u64_u32 writes its carry-out mask into the s7 it
// multiplies by; v_add reads s9 before the v_cmp after it writes s9 as a mask. Every lane must
// read the values from before: out[3 * (64 * group + l) + 0..3] = {64 * group + l,
// 0x1234 + l, the v_cmp mask of the lane's wave}.
	.amdgcn_target "amdgcn-amd-amdhsa--gfx1030"
	.text
	.globl	rounds
	.p2align	8
	.type	rounds,@function
rounds:
	s_load_dwordx2 s[4:5], s[0:1], 0x0
	s_mul_i32 s3, s2, 1000
	v_lshlrev_b32_e32 v1, 2, v0
	v_add_nc_u32_e32 v2, s3, v0
	ds_write_b32 v1, v2
	v_readfirstlane_b32 s6, v0
	s_lshr_b32 s6, s6, 5
	s_waitcnt lgkmcnt(0)
	s_barrier
	s_cmp_eq_u32 s6, 2
	s_cbranch_scc1 .Lend
	v_add_nc_u32_e32 v3, 32, v0
	v_subrev_nc_u32_e32 v4, 0x60, v3
	v_cmp_le_u32_e32 vcc_lo, 0x60, v3
	v_cndmask_b32_e32 v3, v3, v4, vcc_lo
	v_lshlrev_b32_e32 v3, 2, v3
	ds_read_b32 v3, v3
	s_waitcnt lgkmcnt(0)
	v_mul_lo_u32 v3, v3, 3
	ds_write_b32 v1, v3 offset:384
	s_waitcnt lgkmcnt(0)
	s_cmp_eq_u32 s6, 0
	s_cbranch_scc1 .Lwave0
	s_barrier
	s_branch .Ljoin
.Lwave0:
	s_barrier
.Ljoin:
	v_xor_b32_e32 v5, 32, v0
	v_lshlrev_b32_e32 v5, 2, v5
	ds_read_b32 v5, v5 offset:384
	s_lshl_b32 s7, s2, 6
	v_add_nc_u32_e32 v6, s7, v0
	v_lshlrev_b32_e32 v6, 2, v6
	s_waitcnt lgkmcnt(0)
	v_add_nc_u32_e32 v5, 7, v5
	global_store_dword v6, v5, s[4:5]
.Lend:
	s_endpgm
	.section	.rodata,#alloc
	.p2align	6
	.amdhsa_kernel rounds
		.amdhsa_group_segment_fixed_size 768
		.amdhsa_kernarg_size 8
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_system_sgpr_workgroup_id_x 1
		.amdhsa_next_free_vgpr 8
		.amdhsa_next_free_sgpr 16
		.amdhsa_wavefront_size32 1
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
	.end_amdhsa_kernel
	.text
	.globl	alias
	.p2align	8
	.type	alias,@function
alias:
	s_load_dwordx2 s[4:5], s[0:1], 0x0
	s_movk_i32 s7, 0x40
	s_movk_i32 s9, 0x1234
	v_mov_b32_e32 v1, 0
	v_mad_u64_u32 v[2:3], s7, s7, s2, v[0:1]
	v_add_nc_u32_e32 v4, s9, v0
	v_cmp_gt_u32_e64 s9, 40, v0
	v_mov_b32_e32 v5, s9
	v_mul_u32_u24_e32 v6, 12, v2
	s_waitcnt lgkmcnt(0)
	global_store_dword v6, v2, s[4:5]
	global_store_dword v6, v4, s[4:5] offset:4
	global_store_dword v6, v5, s[4:5] offset:8
	s_endpgm
	.section	.rodata,#alloc
	.p2align	6
	.amdhsa_kernel alias
		.amdhsa_kernarg_size 8
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_system_sgpr_workgroup_id_x 1
		.amdhsa_next_free_vgpr 8
		.amdhsa_next_free_sgpr 16
		.amdhsa_wavefront_size32 1
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
	.end_amdhsa_kernel
