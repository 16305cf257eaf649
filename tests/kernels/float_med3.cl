// Three-operand float min/max/median: v_min3_f32, v_max3_f32, v_med3_f32 (clamp), with NaNs and
// signed zeros among the inputs.
__kernel void float_med3(__global const float *in, __global float *out) {
    size_t i = get_global_id(0);
    float a = in[i], b = in[(i + 17) & 63], c = in[(i + 40) & 63];
    if (i % 7 == 3) a = as_float(0x7fc00000u);
    if (i % 11 == 5) b = -0.0f;
    out[4 * i + 0] = fmin(fmin(a, b), c);
    out[4 * i + 1] = fmax(fmax(a, b), c);
    out[4 * i + 2] = fmax(fmin(a, 0.75f), -0.5f);
    out[4 * i + 3] = fmin(fmax(b, -1.0f), 1.0f) + fmax(fmin(c, 2.0f), 0.25f);
}
