// break and continue inside a divergent loop.
__kernel void loop_break_continue(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i], acc = 0;
    for (uint k = 0; k < 64u; k++) {
        uint v = in[(i + k) % 64];
        if (v % 3u == 0u) continue;
        acc += v >> 4;
        if ((v & 0xffu) == (x & 0xffu) || acc > 0x40000000u) break;
    }
    out[i] = acc;
}
