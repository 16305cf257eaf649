// Integer dot products (v_dot2/v_dot4/v_dot8, with and without clamp) through the AMDGPU
// builtins; the host computes the same sums in plain C (64-bit, saturated for clamp).
#ifdef __AMDGCN__
#define SDOT2(a, b, c, cl) __builtin_amdgcn_sdot2(as_short2(a), as_short2(b), (int)(c), cl)
#define UDOT2(a, b, c, cl) __builtin_amdgcn_udot2(as_ushort2(a), as_ushort2(b), (c), cl)
#define SDOT4(a, b, c, cl) __builtin_amdgcn_sdot4((int)(a), (int)(b), (int)(c), cl)
#define UDOT4(a, b, c, cl) __builtin_amdgcn_udot4((a), (b), (c), cl)
#define SDOT8(a, b, c, cl) __builtin_amdgcn_sdot8((int)(a), (int)(b), (int)(c), cl)
#define UDOT8(a, b, c, cl) __builtin_amdgcn_udot8((a), (b), (c), cl)
#else
static inline long field(uint v, int bits, int k, int sgn) {
    uint x = v << (32 - bits * (k + 1));
    return sgn ? (long)((int)x >> (32 - bits)) : (long)(x >> (32 - bits));
}
static inline uint dot(uint a, uint b, uint c, int bits, int sgn, int cl) {
    long s = sgn ? (long)(int)c : (long)c;
    for (int k = 0; k < 32 / bits; k++)
        s += field(a, bits, k, sgn) * field(b, bits, k, sgn);
    if (cl && sgn) s = s < -2147483648L ? -2147483648L : (s > 2147483647L ? 2147483647L : s);
    if (cl && !sgn) s = s < 0 ? 0 : (s > 4294967295L ? 4294967295L : s);
    return (uint)s;
}
#define SDOT2(a, b, c, cl) dot(a, b, c, 16, 1, cl)
#define UDOT2(a, b, c, cl) dot(a, b, c, 16, 0, cl)
#define SDOT4(a, b, c, cl) dot(a, b, c, 8, 1, cl)
#define UDOT4(a, b, c, cl) dot(a, b, c, 8, 0, cl)
#define SDOT8(a, b, c, cl) dot(a, b, c, 4, 1, cl)
#define UDOT8(a, b, c, cl) dot(a, b, c, 4, 0, cl)
#endif
__kernel void pk_dot(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint a = in[i], b = in[63 - i], c = in[(i * 5) & 63];
    // Accumulators near the limits in some lanes, so that clamp saturates.
    uint cs = (i & 3) == 1 ? 0x7FFFFF00u : ((i & 3) == 2 ? 0x80000010u : c);
    uint cu = (i & 3) == 3 ? 0xFFFFFF00u : c;
    out[i * 8 + 0] = (uint)SDOT2(a, b, cs, false);
    out[i * 8 + 1] = (uint)SDOT2(a, b, cs, true);
    out[i * 8 + 2] = UDOT2(a, b, cu, true);
    out[i * 8 + 3] = (uint)SDOT4(a, b, cs, true);
    out[i * 8 + 4] = UDOT4(a, b, cu, false);
    out[i * 8 + 5] = UDOT4(a, b, cu, true);
    out[i * 8 + 6] = (uint)SDOT8(a, b, cs, true);
    out[i * 8 + 7] = UDOT8(a, b, cu, true);
}
