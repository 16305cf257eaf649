// ordered comparisons and selects on floats.
__kernel void float_compare(__global const float *in, __global uint *out) {
    size_t i = get_global_id(0);
    float a = in[i], b = in[(i + 1) % 64];
    uint r = (a < b) | (a <= b) << 1 | (a > b) << 2 | (a >= b) << 3 | (a == b) << 4 | (a != b) << 5;
    r |= (a * 0.0f < b) << 6;
    out[i] = r;
}
