// bitonic sorting network over 64 keys in LDS.
__kernel void bitonic_sort(__global const uint *in, __global uint *out) {
    __local uint s[64];
    uint l = (uint)get_local_id(0);
    s[l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint size = 2; size <= 64; size <<= 1)
        for (uint stride = size >> 1; stride > 0; stride >>= 1) {
            uint p = l ^ stride;
            uint a = s[l], b = s[p];
            bool up = (l & size) == 0;
            barrier(CLK_LOCAL_MEM_FENCE);
            if (p > l) { if ((a > b) == up) { s[l] = b; s[p] = a; } }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    out[get_global_id(0)] = s[l];
}
