// a wave-wide sum with swizzles and DPP, no LDS array.
__kernel void lane_wave_reduce(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i] & 0xfffu;
    x += aps5_wave_swizzle(x, 0x041f);
    x += aps5_wave_swizzle(x, 0x081f);
    x += aps5_wave_swizzle(x, 0x101f);
    x += aps5_wave_swizzle(x, 0x201f);
    x += aps5_wave_swizzle(x, 0x401f);
    out[i] = x;
}
