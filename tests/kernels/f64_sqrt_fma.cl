// f64 square root and fma.
__kernel void f64_sqrt_fma(__global const double *in, __global double *out) {
    size_t i = get_global_id(0);
    double a = in[i], b = in[(i + 2) % 64];
    out[i] = sqrt(fabs(a) + 2.0) + fma(a, b, -1.0 / 3.0);
}
