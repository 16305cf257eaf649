// 32x32 integer matrix multiply with 8x8 LDS tiles.
__kernel void matmul_tiled(__global const uint *a, __global const uint *b, __global uint *c) {
    __local uint ta[8][8], tb[8][8];
    size_t lx = get_local_id(0), ly = get_local_id(1);
    size_t x = get_global_id(0), y = get_global_id(1);
    uint s = 0;
    for (int t = 0; t < 4; t++) {
        ta[ly][lx] = a[y * 32 + t * 8 + lx];
        tb[ly][lx] = b[(t * 8 + ly) * 32 + x];
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < 8; k++) s += ta[ly][k] * tb[k][lx];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    c[y * 32 + x] = s;
}
