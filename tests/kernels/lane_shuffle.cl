// ds_bpermute_b32: lane i reads lane (i ^ 3) and a rotation within its 32-lane half.
__kernel void lane_shuffle(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i], l = aps5_lane_id();
    uint a = aps5_wave_shuffle(x, l ^ 3u);
    uint b = aps5_wave_shuffle(x * 5u, (l & ~31u) | ((l + 7u) & 31u));
    out[i] = a + b;
}
