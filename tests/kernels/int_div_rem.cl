// unsigned and signed division and remainder by a per-lane divisor.
__kernel void int_div_rem(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint a = in[i], b = (in[(i + 5) % 64] >> (i % 24)) | 1u;
    int sa = (int)a, sb = (int)(b | 2u) * ((i & 1) ? -1 : 1);
    out[i] = a / b + a % b * 7u + (uint)(sa / sb) + (uint)(sa % sb);
}
