// branch-free selects from comparisons.
__kernel void int_select(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint a = in[i], b = in[(i + 1) % 64], c = in[(i + 2) % 64];
    uint x = a > b ? c : a;
    uint y = (int)b < (int)c ? a ^ b : b - c;
    out[i] = (x == y) ? 1u : (x < y ? x : y + 1u);
}
