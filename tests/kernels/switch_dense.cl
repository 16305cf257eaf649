// a dense switch (jump-table shaped).
__kernel void switch_dense(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i], r;
    switch (x % 8u) {
    case 0: r = x + 1u; break;
    case 1: r = x * 2u; break;
    case 2: r = x ^ 0x55u; break;
    case 3: r = x >> 3; break;
    case 4: r = ~x; break;
    case 5: r = x * x; break;
    case 6: r = 42u; /* fall through */
    case 7: r = x - 9u; break;
    default: r = 0;
    }
    out[i] = r;
}
