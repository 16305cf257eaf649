// a uniform counted loop.
__kernel void loop_count(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint acc = 0, x = in[i];
    for (uint k = 0; k < 37u; k++) acc = acc * 31u + (x ^ k);
    out[i] = acc;
}
