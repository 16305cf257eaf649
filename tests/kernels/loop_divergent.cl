// per-lane trip counts (divergent loop exit).
__kernel void loop_divergent(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint n = in[i] % 50u, acc = 1;
    for (uint k = 0; k < n; k++) acc = acc * 3u + k;
    out[i] = acc;
}
