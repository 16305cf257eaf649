// byte loads and stores with arithmetic.
__kernel void u8_bytes(__global const uchar *in, __global uchar *out) {
    size_t i = get_global_id(0);
    uchar a = in[i], b = in[(i * 5) % 256];
    out[i] = (uchar)(a * 3 + (b ^ 0x5a) + (a > b ? 1 : 0));
}
