// 16x16 matrix multiply, one output per lane (2-D grid).
__kernel void matmul_naive(__global const float *a, __global const float *b, __global float *c) {
    size_t x = get_global_id(0), y = get_global_id(1);
    float s = 0.0f;
    for (int k = 0; k < 16; k++) s += a[y * 16 + k] * b[k * 16 + x];
    c[y * 16 + x] = s;
}
