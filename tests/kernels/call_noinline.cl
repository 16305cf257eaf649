// Calls that stay calls: noinline functions called from two sites (the return goes to the
// right one), a function that calls another (the return address is saved across the inner
// call), and a loop around a call.
__attribute__((noinline)) uint mix(uint x, uint k);
__attribute__((noinline)) uint twice(uint x);

__kernel void call_noinline(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint a = in[i];
    uint r = mix(a, 3u);
    if (a & 1)
        r += mix(r, 5u);
    uint acc = 0;
    for (uint j = 0; j < (a & 3); j++)
        acc ^= twice(acc + j + r);
    out[2 * i] = r;
    out[2 * i + 1] = acc;
}

uint mix(uint x, uint k) {
    x ^= x >> 13;
    x *= 0x9e3779b1u + k;
    return x ^ (x >> 7);
}

uint twice(uint x) {
    return mix(x, 1u) + mix(x ^ 0x55u, 2u);
}
