// f64 add, multiply, divide.
__kernel void f64_arith(__global const double *in, __global double *out) {
    size_t i = get_global_id(0);
    double a = in[i], b = in[(i + 1) % 64];
    out[i] = (a + b) * (a - 0.5) / (b * b + 1.0);
}
