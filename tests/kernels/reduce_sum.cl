// tree reduction of a workgroup in LDS.
__kernel void reduce_sum(__global const uint *in, __global uint *out) {
    __local uint s[64];
    size_t l = get_local_id(0);
    s[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint step = 32; step > 0; step >>= 1) {
        if (l < step) s[l] += s[l + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[get_group_id(0)] = s[0];
}
