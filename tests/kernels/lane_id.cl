// v_mbcnt lane ids and the wave size.
__kernel void lane_id(__global uint *out) {
    size_t i = get_global_id(0);
    out[i] = aps5_lane_id() | aps5_wave_size() << 8 | (uint)get_local_id(0) << 16;
}
