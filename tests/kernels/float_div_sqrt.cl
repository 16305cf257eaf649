// f32 division and square root (correctly rounded: -cl-fp32-correctly-rounded-divide-sqrt).
__kernel void float_div_sqrt(__global const float *in, __global float *out) {
    size_t i = get_global_id(0);
    float a = in[i], b = in[(i + 3) % 64];
    out[i] = a / (b + 9.0f) + sqrt(fabs(a) + 1.0f);
}
