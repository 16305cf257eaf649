// popcount, leading/trailing zeros, bit reverse, byte swap.
__kernel void int_bitops(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i] >> (i % 32);
    uint r = (uint)__builtin_popcount(x);
    r += 100u * (uint)(x ? __builtin_clz(x) : 32);
    r += 10000u * (uint)(x ? __builtin_ctz(x) : 32);
    out[i] = r ^ __builtin_bitreverse32(x) ^ __builtin_bswap32(x);
}
