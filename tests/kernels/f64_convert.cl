// f64 <-> i64, f32 <-> f64 conversions and floor.
__kernel void f64_convert(__global const double *in, __global ulong *out) {
    size_t i = get_global_id(0);
    double a = in[i] * 1.0e9;
    long s = (long)a;
    float f = (float)a;
    double back = (double)s + (double)f * 0.5 + floor(a);
    out[i] = (ulong)s ^ (ulong)as_uint(f) << 20 ^ as_ulong(back);
}
