// Hand-written gfx1030 wave32 kernels for the cross-lane and sub-dword tests
// (translate_run.rs), assembled by clang-14 (llvm-mc). The test computes every expected value
// from the RDNA2 ISA semantics of each instruction.
//
// xlane (workgroup 32): data v1 = 7 * lane + 100; lanes with lane % 5 == 3 are off (EXEC =
// 0xef7bdef7) while v_permlane16/x16 (plain, FI, BOUND_CTRL), ds_bpermute (with offset, and
// with vdst == data), ds_permute (colliding targets) and ds_swizzle (bit mode, quad perm)
// run; out[8 * lane + 0..8] = v2, v3, v4, v5, v6, v7, v10, v12.
//
// subdword (workgroup 64 = 2 waves): byte and short loads (zero/sign extended, d16 low/high)
// from `in` at odd addresses, byte and d16_hi short stores into `bout` where the two waves
// write alternate bytes of the same dwords, and the same through LDS across an s_barrier;
// out[12 * lane + 0..11] = v1..v7, v28, v30, v31.
//
// badshort: global_load_ushort at an odd address (fault reason Unaligned, 2 bytes).
//
// atom64 (workgroup 64 = 2 waves, 2 groups): 64-bit global atomics on `cells` (u64[8]):
// add_x2 of (lane << 32 | 0xffffffff) into cells[0] (carries cross the halves), umax_x2 and
// smin_x2 of a per-lane value (odd low half, never 0) into cells[1] / cells[2], and_x2 / or_x2 / xor_x2 into cells[3..6],
// swap_x2 (returning) into cells[6], cmpswap_x2 (returning) of cells[7] from 0 to a lane's
// value; out[2 * (64 * group + lane) ..] = the swap's old value, out[256 + ...] = the
// cmpswap's. Then 32-bit inc and dec with limit 50 on the two u32 of cells[8].
	.amdgcn_target "amdgcn-amd-amdhsa--gfx1030"
	.text
	.globl	xlane
	.p2align	8
	.type	xlane,@function
xlane:
	s_load_dwordx2 s[4:5], s[0:1], 0x0
	v_mul_u32_u24_e32 v1, 7, v0
	v_add_nc_u32_e32 v1, 0x64, v1
	v_mov_b32_e32 v2, 0xdead
	v_mov_b32_e32 v3, 0xdead
	v_mov_b32_e32 v4, 0xdead
	v_mov_b32_e32 v5, 0xdead
	v_mov_b32_e32 v6, 0xdead
	v_mov_b32_e32 v7, 0xdead
	v_mov_b32_e32 v12, 0xdead
	v_mov_b32_e32 v10, v1
	v_mul_u32_u24_e32 v8, 13, v0
	v_add_nc_u32_e32 v8, 5, v8
	v_and_b32_e32 v8, 31, v8
	v_lshlrev_b32_e32 v8, 2, v8
	v_mul_u32_u24_e32 v9, 3, v0
	v_and_b32_e32 v9, 15, v9
	v_lshlrev_b32_e32 v9, 2, v9
	s_mov_b32 s6, 0x1f2e3d4c
	s_mov_b32 s7, 0x8b9a0f5e
	s_mov_b32 exec_lo, 0xef7bdef7
	v_permlane16_b32 v2, v1, s6, s7
	v_permlanex16_b32 v3, v1, s6, s7 op_sel:[1,0]
	v_permlane16_b32 v4, v1, s6, s7 op_sel:[0,1]
	ds_bpermute_b32 v5, v8, v1 offset:8
	ds_permute_b32 v6, v9, v1
	ds_swizzle_b32 v7, v1 offset:swizzle(BITMASK_PERM,"01pip")
	ds_bpermute_b32 v10, v8, v10
	ds_swizzle_b32 v12, v1 offset:swizzle(QUAD_PERM,2,0,3,1)
	s_waitcnt lgkmcnt(0)
	s_mov_b32 exec_lo, -1
	v_lshlrev_b32_e32 v11, 5, v0
	global_store_dwordx4 v11, v[2:5], s[4:5]
	global_store_dword v11, v6, s[4:5] offset:16
	global_store_dword v11, v7, s[4:5] offset:20
	global_store_dword v11, v10, s[4:5] offset:24
	global_store_dword v11, v12, s[4:5] offset:28
	s_endpgm
	.section	.rodata,#alloc
	.p2align	6
	.amdhsa_kernel xlane
		.amdhsa_kernarg_size 8
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_next_free_vgpr 16
		.amdhsa_next_free_sgpr 16
		.amdhsa_wavefront_size32 1
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
	.end_amdhsa_kernel
	.text
	.globl	subdword
	.p2align	8
	.type	subdword,@function
subdword:
	s_load_dwordx4 s[4:7], s[0:1], 0x0
	s_load_dwordx2 s[8:9], s[0:1], 0x10
	v_mul_u32_u24_e32 v20, 48, v0
	v_and_b32_e32 v21, 31, v0
	v_and_b32_e32 v22, 15, v0
	v_lshlrev_b32_e32 v22, 1, v22
	v_mov_b32_e32 v5, 0x11112222
	v_mov_b32_e32 v6, 0x33334444
	v_mov_b32_e32 v7, 0x55556666
	v_mov_b32_e32 v31, 0x77778888
	s_waitcnt lgkmcnt(0)
	global_load_ubyte v1, v21, s[4:5]
	global_load_sbyte v2, v21, s[4:5] offset:1
	global_load_ushort v3, v22, s[4:5]
	global_load_sshort v4, v22, s[4:5] offset:2
	global_load_ubyte_d16_hi v5, v21, s[4:5] offset:3
	global_load_sbyte_d16 v6, v21, s[4:5]
	global_load_short_d16_hi v7, v22, s[4:5] offset:6
	// byte 2 * (lane & 31) + (lane >> 5) = 3 * lane + 1
	v_lshlrev_b32_e32 v23, 1, v21
	v_lshrrev_b32_e32 v24, 5, v0
	v_or_b32_e32 v23, v23, v24
	v_mul_u32_u24_e32 v24, 3, v0
	v_add_nc_u32_e32 v24, 1, v24
	global_store_byte v23, v24, s[8:9]
	// short at 64 + 2 * lane = the high half of (lane * 0x101 + 7) << 16 | 0xbeef
	v_mul_u32_u24_e32 v26, 0x101, v0
	v_add_nc_u32_e32 v26, 7, v26
	v_lshlrev_b32_e32 v26, 16, v26
	v_or_b32_e32 v26, 0xbeef, v26
	v_lshlrev_b32_e32 v25, 1, v0
	global_store_short_d16_hi v25, v26, s[8:9] offset:64
	// LDS: the same byte pattern, read back from the other wave's lane 63 - lane
	ds_write_b8 v23, v24
	ds_write_b16_d16_hi v25, v26 offset:64
	s_waitcnt lgkmcnt(0)
	s_barrier
	v_sub_nc_u32_e32 v29, 63, v0
	ds_read_u8 v28, v29
	ds_read_i8 v30, v29
	v_lshlrev_b32_e32 v32, 1, v29
	ds_read_u16_d16_hi v31, v32 offset:64
	s_waitcnt vmcnt(0) lgkmcnt(0)
	global_store_dwordx4 v20, v[1:4], s[6:7]
	global_store_dwordx3 v20, v[5:7], s[6:7] offset:16
	global_store_dword v20, v28, s[6:7] offset:28
	global_store_dword v20, v30, s[6:7] offset:32
	global_store_dword v20, v31, s[6:7] offset:36
	s_endpgm
	.section	.rodata,#alloc
	.p2align	6
	.amdhsa_kernel subdword
		.amdhsa_group_segment_fixed_size 256
		.amdhsa_kernarg_size 24
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_next_free_vgpr 40
		.amdhsa_next_free_sgpr 16
		.amdhsa_wavefront_size32 1
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
	.end_amdhsa_kernel
	.text
	.globl	badshort
	.p2align	8
	.type	badshort,@function
badshort:
	s_load_dwordx2 s[4:5], s[0:1], 0x0
	v_lshlrev_b32_e32 v1, 2, v0
	s_waitcnt lgkmcnt(0)
	global_load_ushort v2, v1, s[4:5] offset:1
	s_waitcnt vmcnt(0)
	global_store_dword v1, v2, s[4:5]
	s_endpgm
	.section	.rodata,#alloc
	.p2align	6
	.amdhsa_kernel badshort
		.amdhsa_kernarg_size 8
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_next_free_vgpr 8
		.amdhsa_next_free_sgpr 16
		.amdhsa_wavefront_size32 1
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
	.end_amdhsa_kernel
	.text
	.globl	atom64
	.p2align	8
	.type	atom64,@function
atom64:
	s_load_dwordx4 s[4:7], s[0:1], 0x0
	s_lshl_b32 s3, s2, 6
	v_add_nc_u32_e32 v10, s3, v0
	v_mov_b32_e32 v1, -1
	v_mov_b32_e32 v2, v10
	v_mul_lo_u32 v3, v10, 0x9e3779b9
	v_or_b32_e32 v3, 1, v3
	v_mul_lo_u32 v4, v10, 0x85ebca6b
	v_mov_b32_e32 v5, 0
	v_mov_b32_e32 v6, 0
	v_lshlrev_b32_e32 v11, 3, v10
	s_waitcnt lgkmcnt(0)
	global_atomic_add_x2 v5, v[1:2], s[4:5]
	global_atomic_umax_x2 v5, v[3:4], s[4:5] offset:8
	global_atomic_smin_x2 v5, v[3:4], s[4:5] offset:16
	global_atomic_and_x2 v5, v[3:4], s[4:5] offset:24
	global_atomic_or_x2 v5, v[3:4], s[4:5] offset:32
	global_atomic_xor_x2 v5, v[3:4], s[4:5] offset:40
	global_atomic_swap_x2 v[7:8], v5, v[3:4], s[4:5] offset:48 glc
	global_atomic_cmpswap_x2 v[12:13], v5, v[3:6], s[4:5] offset:56 glc
	v_mov_b32_e32 v9, 50
	global_atomic_inc v5, v9, s[4:5] offset:64
	global_atomic_dec v5, v9, s[4:5] offset:68
	s_waitcnt vmcnt(0)
	global_store_dwordx2 v11, v[7:8], s[6:7]
	global_store_dwordx2 v11, v[12:13], s[6:7] offset:1024
	s_endpgm
	.section	.rodata,#alloc
	.p2align	6
	.amdhsa_kernel atom64
		.amdhsa_kernarg_size 16
		.amdhsa_user_sgpr_kernarg_segment_ptr 1
		.amdhsa_system_sgpr_workgroup_id_x 1
		.amdhsa_next_free_vgpr 16
		.amdhsa_next_free_sgpr 16
		.amdhsa_wavefront_size32 1
		.amdhsa_reserve_vcc 1
		.amdhsa_reserve_flat_scratch 0
	.end_amdhsa_kernel
