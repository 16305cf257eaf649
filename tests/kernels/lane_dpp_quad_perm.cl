// DPP quad_perm and row_mirror / row_half_mirror.
__kernel void lane_dpp_quad_perm(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i];
    uint a = aps5_wave_dpp(0, x, 0x1b, true);  /* quad_perm:[3,2,1,0] */
    uint b = aps5_wave_dpp(0, x, 0x140, true); /* row_mirror */
    uint c = aps5_wave_dpp(0, x, 0x141, true); /* row_half_mirror */
    out[i] = a ^ (b << 3) ^ (c << 7);
}
