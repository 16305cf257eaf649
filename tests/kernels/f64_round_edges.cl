// f64 rounding at its edges, bit-exact: signed zeros, ties on both signs (0.5, 1.5, 2.5),
// the last values with a fraction (2^52 - 0.5), values past 2^52 and 2^53, the smallest
// denormal, infinities and a NaN (its sign and payload are masked off: only "is a NaN" counts).
__constant double edges[32] = {
    0.0, -0.0, 0.25, -0.25, 0.5, -0.5, 0.75, -0.75,
    1.5, -1.5, 2.5, -2.5, 3.5, -3.5, 7.5, -7.5,
    4503599627370495.5, -4503599627370495.5, 4503599627370496.0, -4503599627370497.0,
    9007199254740993.0, 2251799813685247.75, -2251799813685248.25, 1.0e300,
    4.9e-324, -4.9e-324, 1.0 / 0.0, -1.0 / 0.0, 0.49999999999999994, -0.49999999999999994,
    123456789.5, -0.0 / 0.0};

ulong bits(double x) {
    ulong b = as_ulong(x);
    // Any NaN compares as one value: hosts may differ in the sign and payload they return.
    return (b & 0x7fffffffffffffffUL) > 0x7ff0000000000000UL ? 0x7ff8000000000000UL : b;
}

__kernel void f64_round_edges(uint one, __global ulong *out) {
    size_t i = get_global_id(0);
    // one is 1 at run time: it keeps the compiler from folding the rounding of a constant.
    double a = edges[i & 31] * (double)one;
    out[4 * i + 0] = bits(trunc(a));
    out[4 * i + 1] = bits(rint(a));
    out[4 * i + 2] = bits(floor(a));
    out[4 * i + 3] = bits(ceil(a));
}
