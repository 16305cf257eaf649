// a private array indexed by data (scratch or register indexing).
__kernel void private_array(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint t[24];
    for (int k = 0; k < 24; k++) t[k] = in[(i + k) % 64] ^ (uint)k;
    uint acc = 0;
    for (int k = 0; k < 24; k++) acc += t[(t[k] >> 3) % 24u] * (uint)(k + 1);
    out[i] = acc;
}
