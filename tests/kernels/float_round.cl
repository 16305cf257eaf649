// floor, ceil, trunc, rint.
__kernel void float_round(__global const float *in, __global float *out) {
    size_t i = get_global_id(0);
    float a = in[i] * 3.3f;
    out[i] = floor(a) + ceil(a) * 10.0f + trunc(a) * 100.0f + rint(a) * 1000.0f;
}
