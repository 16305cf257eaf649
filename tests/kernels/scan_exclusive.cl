// Blelloch work-efficient exclusive scan (up-sweep, down-sweep).
__kernel void scan_exclusive(__global const uint *in, __global uint *out) {
    __local uint s[128];
    size_t l = get_local_id(0), g = get_group_id(0) * 128;
    s[2 * l] = in[g + 2 * l];
    s[2 * l + 1] = in[g + 2 * l + 1];
    uint off = 1;
    for (uint d = 64; d > 0; d >>= 1) {
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < d) { uint a = off * (2 * l + 1) - 1, b = off * (2 * l + 2) - 1; s[b] += s[a]; }
        off <<= 1;
    }
    if (l == 0) s[127] = 0;
    for (uint d = 1; d < 128; d <<= 1) {
        off >>= 1;
        barrier(CLK_LOCAL_MEM_FENCE);
        if (l < d) {
            uint a = off * (2 * l + 1) - 1, b = off * (2 * l + 2) - 1;
            uint t = s[a]; s[a] = s[b]; s[b] += t;
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    out[g + 2 * l] = s[2 * l];
    out[g + 2 * l + 1] = s[2 * l + 1];
}
