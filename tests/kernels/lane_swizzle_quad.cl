// ds_swizzle_b32 in quad-permute mode.
__kernel void lane_swizzle_quad(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i];
    uint a = aps5_wave_swizzle(x, 0x801b); /* quad reverse 3,2,1,0 */
    uint b = aps5_wave_swizzle(x, 0x8000); /* broadcast quad lane 0 */
    out[i] = a + b * 7u;
}
