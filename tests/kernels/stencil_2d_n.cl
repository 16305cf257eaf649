// 5-point Jacobi step with fixed borders on a grid the size of the dispatch: the GPU bench's
// stencil (`cargo xtask bench glsl`, which runs it at 4096 x 4096).
__kernel void stencil_2d_n(__global const float *in, __global float *out) {
    int x = (int)get_global_id(0), y = (int)get_global_id(1);
    int w = (int)get_global_size(0), h = (int)get_global_size(1);
    int i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) { out[i] = in[i]; return; }
    out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - w] + in[i + w]);
}
