// a per-lane choice between two buffers (64-bit pointer phi).
__kernel void pointer_select(__global const uint *a, __global const uint *b, __global uint *out) {
    size_t i = get_global_id(0);
    __global const uint *p = (a[i] & 1u) ? a : b;
    if (i & 4) p += 1;
    out[i] = p[(i * 3) % 63];
}
