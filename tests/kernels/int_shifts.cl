// logical, arithmetic and rotate shifts by variable amounts.
__kernel void int_shifts(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i], s = in[(i + 3) % 64] & 31u;
    uint rot = (x << s) | (x >> ((32u - s) & 31u));
    out[i] = (x << s) ^ (x >> s) ^ (uint)((int)x >> s) ^ (s ? rot : x);
}
