// 32x32->64-bit multiply, high and low halves.
__kernel void int_mul_hi(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    ulong p = (ulong)in[i] * (ulong)(in[(i + 1) % 64] | 1u);
    out[i] = (uint)(p >> 32) ^ (uint)p;
}
