#pragma OPENCL EXTENSION cl_khr_fp16 : enable
// Mixed-precision fma: f16 halves (either half, abs/neg) with f32 operands, to an f32
// (v_fma_mix_f32) or into one half of an f16 pair (v_fma_mixlo/mixhi_f16: the f32 fma rounded
// to f16, which is what the source says too). Inputs: halves below 2 in magnitude.
__kernel void pk_mix(__global const uint *in, __global const float *fin, __global uint *out) {
    size_t i = get_global_id(0);
    half2 a = as_half2(in[i] & 0xBFFFBFFFu), b = as_half2(in[63 - i] & 0xBFFFBFFFu);
    float f = fin[i], g = fin[(i * 5) & 63];
    float m0 = fma((float)a.x, (float)b.y, f);
    float m1 = fma((float)a.y, f, -(float)b.x);
    float m2 = fma(fabs((float)a.x), g, (float)b.x);
    half r0 = (half)fma((float)a.x, (float)b.x, (float)a.y);
    half r1 = (half)fma((float)a.y, (float)b.y, f);
    out[i * 4 + 0] = as_uint(m0);
    out[i * 4 + 1] = as_uint(m1);
    out[i * 4 + 2] = as_uint(m2);
    out[i * 4 + 3] = as_uint((half2)(r0, r1));
}
