// n x n float matrix multiply, one output per lane (2-D grid of n x n): the GPU bench's
// matmul (`cargo xtask bench glsl`, which runs it at 512 x 512).
__kernel void matmul_n(__global const float *a, __global const float *b, __global float *c, uint n) {
    size_t x = get_global_id(0), y = get_global_id(1);
    float s = 0.0f;
    for (uint k = 0; k < n; k++) s += a[y * n + k] * b[k * n + x];
    c[y * n + x] = s;
}
