// v_readlane with a constant lane and a computed uniform lane.
__kernel void lane_readlane(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i] * 3u;
    uint a = aps5_wave_readlane(x, 5);
    uint b = aps5_wave_readlane(x, aps5_wave_readfirstlane(in[get_group_id(0) * 64]) % 32u);
    out[i] = a ^ (b << 1);
}
