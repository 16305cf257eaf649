// transpose 8x8 tiles through LDS in a 2-D workgroup.
__kernel void local_transpose(__global const float *in, __global float *out) {
    __local float tile[8][9];
    size_t x = get_local_id(0), y = get_local_id(1);
    size_t gx = get_group_id(0) * 8, gy = get_group_id(1) * 8, w = get_global_size(0);
    tile[y][x] = in[(gy + y) * w + gx + x];
    barrier(CLK_LOCAL_MEM_FENCE);
    out[(gx + y) * w + gy + x] = tile[x][y];
}
