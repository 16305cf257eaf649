// 64-bit add, subtract, multiply, shifts and compares.
__kernel void int64_arith(__global const ulong *in, __global ulong *out) {
    size_t i = get_global_id(0);
    ulong a = in[i], b = in[(i + 7) % 64];
    ulong r = a * b + (a >> (b & 63)) - (b << (a & 63));
    r ^= (long)a < (long)b ? 0x123456789abcdefUL : a + 1;
    out[i] = r + (ulong)((long)a >> 17);
}
