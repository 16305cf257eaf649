// f32 <-> i32/u32 conversions (in range), and back.
__kernel void float_convert(__global const float *in, __global uint *out) {
    size_t i = get_global_id(0);
    float a = in[i] * 1000.0f;
    int s = (int)a;
    uint u = (uint)fabs(a);
    float back = (float)s * 0.5f + (float)(u * 3u);
    out[i] = (uint)s ^ (u << 8) ^ as_uint(back);
}
