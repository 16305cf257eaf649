// if / else on data.
__kernel void branch_if_else(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i], r;
    if (x & 1u) r = x * 3u + 1u; else r = x >> 1;
    out[i] = r;
}
