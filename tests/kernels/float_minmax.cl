// fmin, fmax, fabs, copysign.
__kernel void float_minmax(__global const float *in, __global float *out) {
    size_t i = get_global_id(0);
    float a = in[i], b = in[63 - i];
    out[i] = fmin(a, b) * 2.0f + fmax(a, b) + fabs(a - b) + copysign(1.0f, a * b);
}
