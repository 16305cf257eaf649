// v_readfirstlane: every lane gets lane 0's value of its wave.
__kernel void lane_readfirstlane(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i];
    out[i] = aps5_wave_readfirstlane(x) + x;
}
