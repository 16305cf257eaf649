// f64 rounding on both signs and on ties: trunc, rint (ties to even), floor, ceil, and the
// fraction x - floor(x), bit-exact. Inputs are quarters (exact ties at .5) and raw values.
__kernel void f64_round(__global const double *in, __global ulong *out) {
    size_t i = get_global_id(0);
    double a = (i & 1) ? in[i] * 1.0e6 : floor(in[i] * 4.0) * 0.25;
    out[6 * i + 0] = as_ulong(trunc(a));
    out[6 * i + 1] = as_ulong(rint(a));
    out[6 * i + 2] = as_ulong(floor(a));
    out[6 * i + 3] = as_ulong(ceil(a));
    out[6 * i + 4] = as_ulong(a - floor(a));
    out[6 * i + 5] = as_ulong(trunc(a * 1.0e-3));
}
