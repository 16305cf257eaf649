// uint4 / float4 loads, stores and component math.
__kernel void vector_types(__global const uint4 *in, __global uint4 *out) {
    size_t i = get_global_id(0);
    uint4 v = in[i], w = in[(i + 1) % 64];
    uint4 r = v * w + (uint4)(1, 2, 3, 4);
    r.xy ^= v.zw;
    out[i] = r.wzyx;
}
