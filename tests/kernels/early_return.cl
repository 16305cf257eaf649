// lanes leave early; the rest keep writing.
__kernel void early_return(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i];
    out[i] = 1u;
    if (x % 5u == 0u) return;
    out[i] = x + 2u;
    if (x % 7u == 0u) return;
    out[i] = x * 3u;
}
