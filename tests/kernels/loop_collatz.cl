// data-dependent while loop (Collatz steps).
__kernel void loop_collatz(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i] + 1u, steps = 0;
    while (x != 1u && steps < 1000u) { x = (x & 1u) ? 3u * x + 1u : x >> 1; steps++; }
    out[i] = steps;
}
