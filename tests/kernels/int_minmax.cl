// signed and unsigned min, max, abs and clamp.
__kernel void int_minmax(__global const int *in, __global int *out) {
    size_t i = get_global_id(0);
    int a = in[i], b = in[63 - i];
    uint ua = (uint)a, ub = (uint)b;
    int m = a < b ? a : b, M = a > b ? a : b;
    uint um = ua < ub ? ua : ub;
    int ab = a < 0 ? -(a >> 1) : (a >> 1);
    int c = a < -1000 ? -1000 : (a > 1000 ? 1000 : a);
    out[i] = m ^ M ^ (int)um ^ ab ^ c;
}
