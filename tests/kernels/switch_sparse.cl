// a sparse switch with default.
__kernel void switch_sparse(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i] % 1000u, r;
    switch (x) {
    case 3: r = 1u; break;
    case 100: r = 2u; break;
    case 257: r = 3u; break;
    case 999: r = 4u; break;
    default: r = x * 7u;
    }
    out[i] = r + (x < 500u ? 10u : 0u);
}
