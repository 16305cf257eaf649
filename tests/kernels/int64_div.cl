// 64-bit unsigned and signed division.
__kernel void int64_div(__global const ulong *in, __global ulong *out) {
    size_t i = get_global_id(0);
    ulong a = in[i], b = (in[(i + 9) % 64] >> (i % 60)) | 1;
    long sa = (long)a, sb = (long)b * ((i & 2) ? -1 : 1);
    out[i] = a / b + a % b + (ulong)(sa / sb);
}
