// Horner polynomial of degree 8.
__kernel void float_poly(__global const float *in, __global float *out) {
    size_t i = get_global_id(0);
    float x = in[i] * 0.125f, y = 0.0f;
    const float c[9] = {1.0f, -0.5f, 0.25f, 3.0f, -1.25f, 0.0625f, 2.0f, -0.75f, 0.5f};
    for (int k = 0; k < 9; k++) y = y * x + c[k];
    out[i] = y;
}
