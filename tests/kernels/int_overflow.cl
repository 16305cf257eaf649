// add/sub/mul with overflow flags (carry chains).
__kernel void int_overflow(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint a = in[i], b = in[(i + 11) % 64], r1, r2, r3;
    uint c1 = __builtin_add_overflow(a, b, &r1);
    uint c2 = __builtin_sub_overflow(a, b, &r2);
    uint c3 = __builtin_mul_overflow(a, b, &r3);
    out[i] = r1 ^ (r2 * 3u) ^ (r3 * 5u) ^ (c1 | c2 << 1 | c3 << 2);
}
