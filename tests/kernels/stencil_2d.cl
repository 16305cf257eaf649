// 5-point Jacobi step on a 16x16 grid with fixed borders.
__kernel void stencil_2d(__global const float *in, __global float *out) {
    int x = (int)get_global_id(0), y = (int)get_global_id(1);
    int i = y * 16 + x;
    if (x == 0 || y == 0 || x == 15 || y == 15) { out[i] = in[i]; return; }
    out[i] = 0.2f * (in[i] + in[i - 1] + in[i + 1] + in[i - 16] + in[i + 16]);
}
