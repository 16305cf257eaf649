// many workgroups, each summing its own slice.
__kernel void multi_group(__global const uint *in, __global uint *out) {
    size_t g = get_group_id(0), l = get_local_id(0);
    uint s = 0;
    for (uint k = 0; k < 4; k++) s += in[(g * 32 + l + k) % 512];
    out[get_global_id(0)] = s * (uint)(g + 1);
}
