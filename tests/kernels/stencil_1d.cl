// 3-point stencil with clamped borders.
__kernel void stencil_1d(__global const float *in, __global float *out) {
    int i = (int)get_global_id(0), n = (int)get_global_size(0);
    float l = in[i > 0 ? i - 1 : 0], c = in[i], r = in[i < n - 1 ? i + 1 : n - 1];
    out[i] = 0.25f * l + 0.5f * c + 0.25f * r;
}
