// reverse a workgroup's elements through LDS and a barrier.
__kernel void local_reverse(__global const uint *in, __global uint *out) {
    __local uint tmp[64];
    size_t l = get_local_id(0), n = get_local_size(0);
    tmp[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[get_global_id(0)] = tmp[n - 1 - l];
}
