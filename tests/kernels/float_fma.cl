// f32 fused multiply-add (one rounding).
__kernel void float_fma(__global const float *in, __global float *out) {
    size_t i = get_global_id(0);
    float a = in[i], b = in[(i + 1) % 64], c = in[(i + 5) % 64];
    out[i] = fma(a, b, c) + fma(b, c * 3.0f, -a);
}
