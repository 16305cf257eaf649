// infinities, NaN and signed zero through arithmetic.
__kernel void float_special(__global const float *in, __global float *out) {
    size_t i = get_global_id(0);
    float a = in[i];
    float inf = 1.0f / 0.0f, nan = inf - inf;
    float r = (i % 4 == 0) ? a * inf : (i % 4 == 1) ? nan + a : (i % 4 == 2) ? -0.0f * a : a / inf;
    out[i] = r;
}
