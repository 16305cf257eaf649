// do-while with a data-dependent condition.
__kernel void loop_do_while(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i], n = 0;
    do { x = x / 3u + (x & 1u); n++; } while (x > 2u);
    out[i] = n * 1000u + x;
}
