#pragma OPENCL EXTENSION cl_khr_fp16 : enable
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
// Packed f16 arithmetic: half2 add, sub, mul, fma, negation and literal constants.
static inline half2 h2(uint x) {
    // Finite halves of every exponent (denormals included): exponent 31 becomes 15.
    ushort lo = x & 0xFFFF, hi = x >> 16;
    if ((lo & 0x7C00) == 0x7C00) lo ^= 0x4000;
    if ((hi & 0x7C00) == 0x7C00) hi ^= 0x4000;
    return as_half2((ushort2)(lo, hi));
}
#ifdef __AMDGCN__
static inline half fma_h(half a, half b, half c) { return __builtin_fmaf16(a, b, c); }
#else
// The host build's fmaf-then-round rounds twice; this is a single rounding: a * b is exact in
// double, TwoSum gives the sum's error, an inexact sum is made odd (round to odd keeps the
// sticky bit), and double -> half is one correct rounding since 53 >= 11 + 2.
static inline half fma_h(half a, half b, half c) {
    double p = (double)a * (double)b, q = (double)c;
    double s = p + q, bb = s - p, e = (p - (s - bb)) + (q - bb);
    ulong bits = as_ulong(s);
    if (e != 0.0 && (bits & 1) == 0)
        bits += ((e < 0.0) == (s < 0.0)) ? 1 : (ulong)-1;
    return (half)as_double(bits);
}
#endif
__kernel void pk_half(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    half2 a = h2(in[i]), b = h2(in[63 - i]), c = h2(in[(i * 7) & 63]);
    half2 add = a + b, sub = a - c.yx, mul = a * b, neg = -a * c;
    half2 f = (half2)(fma_h(a.x, b.x, c.x), fma_h(a.y, b.y, c.y));
    half2 k = a * (half2)(2.0h, 2.0h) + (half2)(0.5h, -1.0h);
    out[i * 8 + 0] = as_uint(add);
    out[i * 8 + 1] = as_uint(sub);
    out[i * 8 + 2] = as_uint(mul);
    out[i * 8 + 3] = as_uint(neg);
    out[i * 8 + 4] = as_uint(a * a - b);
    out[i * 8 + 5] = as_uint((a + b) * c);
    out[i * 8 + 6] = as_uint(f);
    out[i * 8 + 7] = as_uint(k);
}
