// nested loops with divergent inner bounds.
__kernel void loop_nested(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i], acc = 0;
    for (uint a = 0; a < 6u; a++)
        for (uint b = 0; b < (x >> (a * 3)) % 9u; b++)
            acc += a * 17u + b * (x | 1u);
    out[i] = acc;
}
