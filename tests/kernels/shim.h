/* aps5 kernel corpus: the shim that makes one OpenCL C kernel build for two targets.
 *
 * Device (clang-14 -target amdgcn-amd-amdhsa -mcpu=gfx1030 -nogpulib): without the ROCm device
 * libraries, OpenCL's work-item functions, barrier, math and atomics are undefined calls; here
 * they are defined on the AMDGPU builtins (TESTING.md, GPU section), so the kernels compile to
 * plain gfx1030 code that the translator sees as a PS5 compute program.
 *
 * Host (clang-14 -target x86_64-linux-gnu): the same functions call the host runner
 * (host_runner.c), which runs each workgroup as local_size threads; barrier is a pthread barrier
 * and the aps5_wave_* cross-lane operations are emulated through per-workgroup slots. Kernels
 * call aps5_wave_* only in workgroup-uniform control flow with every lane of the wave active
 * (the host emulation synchronises the whole workgroup).
 *
 * Passed with -include before the kernel; -ffp-contract=off on both sides keeps a*b+c unfused. */
#ifndef APS5_SHIM_H
#define APS5_SHIM_H

#define APS5_OVERLOAD __attribute__((overloadable, always_inline))
#define APS5_INLINE static inline __attribute__((always_inline))

/* Math through the compiler's builtins (lowered to hardware instructions, no library). */
#define APS5_MATH1(name, builtin_f, builtin_d) \
    APS5_OVERLOAD float name(float x) { return builtin_f(x); } \
    APS5_OVERLOAD double name(double x) { return builtin_d(x); }
APS5_MATH1(sqrt, __builtin_sqrtf, __builtin_sqrt)
APS5_MATH1(fabs, __builtin_fabsf, __builtin_fabs)
APS5_MATH1(floor, __builtin_floorf, __builtin_floor)
APS5_MATH1(ceil, __builtin_ceilf, __builtin_ceil)
APS5_MATH1(trunc, __builtin_truncf, __builtin_trunc)
APS5_MATH1(rint, __builtin_rintf, __builtin_rint)
#define APS5_MATH2(name, builtin_f, builtin_d) \
    APS5_OVERLOAD float name(float x, float y) { return builtin_f(x, y); } \
    APS5_OVERLOAD double name(double x, double y) { return builtin_d(x, y); }
APS5_MATH2(fmin, __builtin_fminf, __builtin_fmin)
APS5_MATH2(fmax, __builtin_fmaxf, __builtin_fmax)
APS5_MATH2(copysign, __builtin_copysignf, __builtin_copysign)
APS5_OVERLOAD float fma(float a, float b, float c) { return __builtin_fmaf(a, b, c); }
APS5_OVERLOAD double fma(double a, double b, double c) { return __builtin_fma(a, b, c); }
APS5_OVERLOAD float mad(float a, float b, float c) { return __builtin_fmaf(a, b, c); }

/* Atomics on 32-bit integers (global and local), relaxed at device scope like OpenCL 1.x. */
#define APS5_ATOMIC(name, builtin) \
    APS5_OVERLOAD int name(volatile __global int *p, int v) { return builtin(p, v, __ATOMIC_RELAXED); } \
    APS5_OVERLOAD uint name(volatile __global uint *p, uint v) { return builtin(p, v, __ATOMIC_RELAXED); } \
    APS5_OVERLOAD int name(volatile __local int *p, int v) { return builtin(p, v, __ATOMIC_RELAXED); } \
    APS5_OVERLOAD uint name(volatile __local uint *p, uint v) { return builtin(p, v, __ATOMIC_RELAXED); }
APS5_ATOMIC(atomic_add, __atomic_fetch_add)
APS5_ATOMIC(atomic_sub, __atomic_fetch_sub)
APS5_ATOMIC(atomic_and, __atomic_fetch_and)
APS5_ATOMIC(atomic_or, __atomic_fetch_or)
APS5_ATOMIC(atomic_xor, __atomic_fetch_xor)
APS5_ATOMIC(atomic_xchg, __atomic_exchange_n)
APS5_ATOMIC(atomic_min, __atomic_fetch_min)
APS5_ATOMIC(atomic_max, __atomic_fetch_max)
#define APS5_CMPXCHG(AS, T) \
    APS5_OVERLOAD T atomic_cmpxchg(volatile AS T *p, T cmp, T v) { \
        __atomic_compare_exchange_n(p, &cmp, v, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED); \
        return cmp; }
APS5_CMPXCHG(__global, int)
APS5_CMPXCHG(__global, uint)
APS5_CMPXCHG(__local, int)
APS5_CMPXCHG(__local, uint)
#define atomic_inc(p) atomic_add((p), 1)
#define atomic_dec(p) atomic_sub((p), 1)

#if defined(__AMDGCN__)
/* hsa_kernel_dispatch_packet_t: workgroup_size_x/y/z at bytes 4/6/8 (u16), grid_size_x/y/z at
 * 12/16/20 (u32). */
APS5_INLINE uint aps5_local_size(uint d) {
    __constant unsigned short *p = (__constant unsigned short *)__builtin_amdgcn_dispatch_ptr();
    return d == 0 ? p[2] : d == 1 ? p[3] : d == 2 ? p[4] : 1;
}
APS5_INLINE uint aps5_grid_size(uint d) {
    __constant uint *p = (__constant uint *)__builtin_amdgcn_dispatch_ptr();
    return d == 0 ? p[3] : d == 1 ? p[4] : d == 2 ? p[5] : 1;
}

APS5_OVERLOAD size_t get_local_id(uint d) {
    return d == 0 ? __builtin_amdgcn_workitem_id_x()
         : d == 1 ? __builtin_amdgcn_workitem_id_y()
         : d == 2 ? __builtin_amdgcn_workitem_id_z() : 0;
}
APS5_OVERLOAD size_t get_group_id(uint d) {
    return d == 0 ? __builtin_amdgcn_workgroup_id_x()
         : d == 1 ? __builtin_amdgcn_workgroup_id_y()
         : d == 2 ? __builtin_amdgcn_workgroup_id_z() : 0;
}
APS5_OVERLOAD size_t get_local_size(uint d) { return aps5_local_size(d); }
APS5_OVERLOAD size_t get_global_size(uint d) { return aps5_grid_size(d); }
APS5_OVERLOAD size_t get_num_groups(uint d) {
    return (aps5_grid_size(d) + aps5_local_size(d) - 1) / aps5_local_size(d);
}
APS5_OVERLOAD size_t get_global_id(uint d) {
    return get_group_id(d) * get_local_size(d) + get_local_id(d);
}
APS5_OVERLOAD uint get_work_dim(void) { return 3; }

/* barrier: release fence, s_barrier, acquire fence (what the device libraries emit). */
APS5_OVERLOAD void barrier(cl_mem_fence_flags flags) {
    (void)flags;
    __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
    __builtin_amdgcn_s_barrier();
    __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}

/* Cross-lane operations. The wave is 32 lanes, or 64 with -mwavefrontsize64. */
#ifdef __AMDGCN_WAVEFRONT_SIZE
#define APS5_WAVE_SIZE __AMDGCN_WAVEFRONT_SIZE
#else
#define APS5_WAVE_SIZE 32
#endif
APS5_INLINE uint aps5_wave_size(void) { return APS5_WAVE_SIZE; }
APS5_INLINE uint aps5_lane_id(void) {
    uint lo = __builtin_amdgcn_mbcnt_lo(~0u, 0u);
#if APS5_WAVE_SIZE == 64
    return __builtin_amdgcn_mbcnt_hi(~0u, lo);
#else
    return lo;
#endif
}
APS5_INLINE uint aps5_wave_readfirstlane(uint x) { return __builtin_amdgcn_readfirstlane(x); }
APS5_INLINE uint aps5_wave_readlane(uint x, uint lane) { return __builtin_amdgcn_readlane(x, lane); }
/* Bit i set when lane i is active and pred is true. */
APS5_INLINE ulong aps5_wave_ballot(int pred) {
    /* llvm.amdgcn.icmp with ICMP_NE (33): v_cmp into an SGPR pair (clang-14 has no ballot_w32). */
    return __builtin_amdgcn_uicmp((uint)(pred != 0), 0u, 33);
}
/* ds_swizzle_b32 with an immediate pattern (offset field). */
#define aps5_wave_swizzle(x, pattern) ((uint)__builtin_amdgcn_ds_swizzle((int)(x), (pattern)))
/* ds_bpermute_b32: lane i reads x from lane src_lane[i]. */
APS5_INLINE uint aps5_wave_shuffle(uint x, uint src_lane) {
    return (uint)__builtin_amdgcn_ds_bpermute((int)(src_lane << 2), (int)x);
}
/* v_mov_b32 with DPP: update_dpp(old, src, dpp_ctrl, row_mask, bank_mask, bound_ctrl). */
#define aps5_wave_dpp(old, x, ctrl, bound_ctrl) \
    ((uint)__builtin_amdgcn_update_dpp((int)(old), (int)(x), (ctrl), 0xf, 0xf, (bound_ctrl)))

#else /* host */
/* The host runner's entry points (host_runner.c). */
size_t aps5_host_id(uint what, uint d); /* what: 0 local id, 1 group id, 2 local size, 3 groups */
void aps5_host_barrier(void);
uint aps5_host_wave_size(void);
uint aps5_host_lanes(uint op, uint x, uint a, uint b); /* op: APS5_LANES_* */
ulong aps5_host_ballot(int pred);
#define APS5_LANES_ID 0
#define APS5_LANES_READFIRST 1
#define APS5_LANES_READ 2
#define APS5_LANES_SWIZZLE 3
#define APS5_LANES_SHUFFLE 4
#define APS5_LANES_DPP 5

APS5_OVERLOAD size_t get_local_id(uint d) { return aps5_host_id(0, d); }
APS5_OVERLOAD size_t get_group_id(uint d) { return aps5_host_id(1, d); }
APS5_OVERLOAD size_t get_local_size(uint d) { return aps5_host_id(2, d); }
APS5_OVERLOAD size_t get_num_groups(uint d) { return aps5_host_id(3, d); }
APS5_OVERLOAD size_t get_global_size(uint d) { return aps5_host_id(2, d) * aps5_host_id(3, d); }
APS5_OVERLOAD size_t get_global_id(uint d) { return get_group_id(d) * get_local_size(d) + get_local_id(d); }
APS5_OVERLOAD uint get_work_dim(void) { return 3; }
APS5_OVERLOAD void barrier(cl_mem_fence_flags flags) { (void)flags; aps5_host_barrier(); }

APS5_INLINE uint aps5_wave_size(void) { return aps5_host_wave_size(); }
APS5_INLINE uint aps5_lane_id(void) { return aps5_host_lanes(APS5_LANES_ID, 0, 0, 0); }
APS5_INLINE uint aps5_wave_readfirstlane(uint x) { return aps5_host_lanes(APS5_LANES_READFIRST, x, 0, 0); }
APS5_INLINE uint aps5_wave_readlane(uint x, uint lane) { return aps5_host_lanes(APS5_LANES_READ, x, lane, 0); }
APS5_INLINE ulong aps5_wave_ballot(int pred) { return aps5_host_ballot(pred != 0); }
#define aps5_wave_swizzle(x, pattern) aps5_host_lanes(APS5_LANES_SWIZZLE, (x), (pattern), 0)
APS5_INLINE uint aps5_wave_shuffle(uint x, uint src_lane) { return aps5_host_lanes(APS5_LANES_SHUFFLE, x, src_lane, 0); }
/* DPP: `old` is what a lane keeps when its source lane is out of the row and bound_ctrl is 0. */
#define aps5_wave_dpp(old, x, ctrl, bound_ctrl) \
    aps5_host_lanes(APS5_LANES_DPP | ((bound_ctrl) ? 0x100u : 0u) | ((uint)(ctrl) << 16), (x), (old), 0)
#endif

#endif
