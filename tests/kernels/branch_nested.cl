// nested data-dependent branches.
__kernel void branch_nested(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i], r = 0;
    if (x & 1u) {
        if (x & 2u) r = x + 10u;
        else if (x & 4u) r = x * 7u;
        else r = 3u;
    } else {
        if ((x >> 8) & 1u) { r = x ^ 0xffu; if (x > 0x80000000u) r += 5u; }
        else r = ~x;
    }
    out[i] = r;
}
