// f32 add, subtract, multiply (no contraction).
__kernel void float_arith(__global const float *in, __global float *out) {
    size_t i = get_global_id(0);
    float a = in[i], b = in[(i + 1) % 64], c = in[(i + 2) % 64];
    out[i] = (a + b) * c - a * 0.25f + (b - c) * (a + 1.5f);
}
