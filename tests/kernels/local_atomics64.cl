// LDS atomics without a host workgroup atomic (docs/TRANSLATOR.md, "Memory"): 64-bit add,
// min/max (signed and unsigned), and, xor, a compare-and-swap loop, and 32-bit ds_inc/ds_dec
// with their wrap rules; every result is order-independent, so the host's pthreads agree.
#if defined(__AMDGCN__)
#define INC32(p, v) __builtin_amdgcn_atomic_inc32((p), (v), __ATOMIC_RELAXED, "workgroup")
#define DEC32(p, v) __builtin_amdgcn_atomic_dec32((p), (v), __ATOMIC_RELAXED, "workgroup")
#else
// The ISA's rules: inc wraps to 0 when old >= v, dec wraps to v when old == 0 or old > v.
static uint INC32(volatile __local uint *p, uint v) {
    uint old = *p;
    while (!__atomic_compare_exchange_n(p, &old, old >= v ? 0u : old + 1u, 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
    return old;
}
static uint DEC32(volatile __local uint *p, uint v) {
    uint old = *p;
    while (!__atomic_compare_exchange_n(p, &old, (old == 0u || old > v) ? v : old - 1u, 0,
                                        __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
    return old;
}
#endif

__kernel void local_atomics64(__global const ulong *in, __global ulong *out) {
    __local ulong sum, mx, mn, xo, an, cas;
    __local long smin, smax;
    __local uint inc, dec;
    size_t l = get_local_id(0);
    if (l == 0) {
        sum = 0; mx = 0; mn = ~0ul; xo = 0; an = ~0ul; cas = 0; smin = 0; smax = 0;
        inc = 0; dec = 1000;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    ulong x = in[get_global_id(0)];
    __atomic_fetch_add(&sum, x, __ATOMIC_RELAXED);
    __atomic_fetch_max(&mx, x, __ATOMIC_RELAXED);
    __atomic_fetch_min(&mn, x, __ATOMIC_RELAXED);
    __atomic_fetch_xor(&xo, x, __ATOMIC_RELAXED);
    __atomic_fetch_and(&an, x | 0x8000000000000001ul, __ATOMIC_RELAXED);
    __atomic_fetch_min(&smin, (long)x, __ATOMIC_RELAXED);
    __atomic_fetch_max(&smax, (long)x, __ATOMIC_RELAXED);
    ulong old = cas;
    while (!__atomic_compare_exchange_n(&cas, &old, old + (x >> 40), 0, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
    }
    INC32(&inc, 37u);
    DEC32(&dec, 1000u);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l == 0) {
        size_t g = 10 * get_group_id(0);
        out[g + 0] = sum; out[g + 1] = mx; out[g + 2] = mn; out[g + 3] = xo; out[g + 4] = an;
        out[g + 5] = cas; out[g + 6] = (ulong)smin; out[g + 7] = (ulong)smax;
        out[g + 8] = inc; out[g + 9] = dec;
    }
}
