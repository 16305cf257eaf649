// DPP row_shr: an inclusive scan within rows of 16 lanes.
__kernel void lane_dpp_row_shr(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i] & 0xffffu;
    x += aps5_wave_dpp(0, x, 0x111, true); /* row_shr:1, out-of-row lanes read 0 */
    x += aps5_wave_dpp(0, x, 0x112, true);
    x += aps5_wave_dpp(0, x, 0x114, true);
    x += aps5_wave_dpp(0, x, 0x118, true);
    out[i] = x;
}
