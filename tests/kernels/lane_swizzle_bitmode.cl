// ds_swizzle_b32 in bit mode (and/or/xor masks over 32 lanes).
__kernel void lane_swizzle_bitmode(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i];
    uint a = aps5_wave_swizzle(x, 0x041f); /* xor 1 */
    uint b = aps5_wave_swizzle(x, 0x401f); /* xor 16 */
    uint c = aps5_wave_swizzle(x, 0x00e7); /* and 7, or 7: broadcast lane 7 of each 8 */
    out[i] = a ^ (b * 3u) ^ (c * 5u);
}
