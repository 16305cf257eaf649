// an 8-key sorting network in registers per lane.
#define CS(a, b) { uint lo = a < b ? a : b, hi = a < b ? b : a; a = lo; b = hi; }
__kernel void sort_network_regs(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint v0 = in[i * 8], v1 = in[i * 8 + 1], v2 = in[i * 8 + 2], v3 = in[i * 8 + 3];
    uint v4 = in[i * 8 + 4], v5 = in[i * 8 + 5], v6 = in[i * 8 + 6], v7 = in[i * 8 + 7];
    CS(v0, v1) CS(v2, v3) CS(v4, v5) CS(v6, v7)
    CS(v0, v2) CS(v1, v3) CS(v4, v6) CS(v5, v7)
    CS(v1, v2) CS(v5, v6) CS(v0, v4) CS(v3, v7)
    CS(v1, v5) CS(v2, v6)
    CS(v1, v4) CS(v3, v6)
    CS(v2, v4) CS(v3, v5)
    CS(v3, v4)
    out[i * 8] = v0; out[i * 8 + 1] = v1; out[i * 8 + 2] = v2; out[i * 8 + 3] = v3;
    out[i * 8 + 4] = v4; out[i * 8 + 5] = v5; out[i * 8 + 6] = v6; out[i * 8 + 7] = v7;
}
