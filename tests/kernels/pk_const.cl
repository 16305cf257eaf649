#pragma OPENCL EXTENSION cl_khr_fp16 : enable
// Packed operations with constants whose halves differ: clang-14 encodes (5, 0) as the inline
// constant -5 of a v_pk_sub_u16 and (2.0, 0.0) as the inline 2.0 of a v_pk_mul_f16, both
// with the default op_sel_hi, so the high half of an inline constant must read as 0; (0, 7)
// becomes 7 with op_sel picking the (zero) high half for the low result. (The product with
// 0.0 has 1.0 added: lavapipe folds x * 0.0 to +0.0 for a compile-time 0.0, losing the sign
// of -x * 0.0; v_mul_f32 with the inline 0 shows the same.)
__kernel void pk_const(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    ushort2 a = as_ushort2(in[i]);
    half2 h = as_half2(in[i] & 0xBFFFBFFFu);
    out[i * 4 + 0] = as_uint(a + (ushort2)(5, 0));
    out[i * 4 + 1] = as_uint(a + (ushort2)(0, 7));
    out[i * 4 + 2] = as_uint(h * (half2)(2.0h, 0.0h) + (half2)(0.5h, 1.0h));
    out[i * 4 + 3] = as_uint(h + (half2)(0.0h, -4.0h));
}
