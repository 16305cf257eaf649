// a mixing hash over many rounds (long dependent integer chain).
__kernel void int_hash(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint h = in[i] ^ 0x811c9dc5u;
    for (int r = 0; r < 16; r++) {
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        h += (uint)r;
    }
    out[i] = h;
}
