// DPP row_shl without bound_ctrl: out-of-row lanes keep the old value.
__kernel void lane_dpp_shl_old(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i];
    out[i] = aps5_wave_dpp(0xdeadu, x, 0x103, false) ^ aps5_wave_dpp(x + 1u, x, 0x121, false);
}
