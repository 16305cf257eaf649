// a loop with two exits and a goto-free state machine.
__kernel void loop_irregular(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint state = in[i] % 4u, x = in[i], n = 0;
    while (n < 40u) {
        n++;
        if (state == 0u) { x = x * 5u + 1u; state = (x >> 7) % 4u; }
        else if (state == 1u) { x ^= x >> 3; state = 2u; }
        else if (state == 2u) { if ((x & 15u) == 3u) break; state = 0u; }
        else { x += n; state = 1u; }
    }
    out[i] = x ^ (n << 24) ^ state;
}
