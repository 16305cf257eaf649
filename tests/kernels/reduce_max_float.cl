// float max reduction in LDS, then across groups with a second pass in group 0 order.
__kernel void reduce_max_float(__global const float *in, __global float *out) {
    __local float s[128];
    size_t l = get_local_id(0);
    s[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint step = 64; step > 0; step >>= 1) {
        if (l < step) s[l] = fmax(s[l], s[l + step]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (l == 0) out[get_group_id(0)] = s[0];
}
