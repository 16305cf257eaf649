// Packed 16-bit integer math: ushort2 / short2 lanes (v_pk_* with op_sel / op_sel_hi).
__kernel void pk_int(__global const ushort2 *in, __global ushort2 *out) {
    size_t i = get_global_id(0);
    ushort2 a = in[i], b = in[63 - i], c = in[(i * 7) & 63];
    short2 sa = as_short2(a), sb = as_short2(b);
    ushort2 add = a + b;
    ushort2 sub = a - b.yx;
    ushort2 mul = a * b;
    ushort2 mad = a * c + b;
    ushort2 shl = a << (b & (ushort2)15);
    ushort2 shr = a >> (c & (ushort2)15);
    short2 sar = sa >> (as_short2(c) & (short2)15);
    ushort2 cy = c.yx;
    ushort2 umax = a > b ? a : b, umin = a < cy ? a : cy;
    short2 sc = as_short2(c);
    short2 smax = sa > sb ? sa : sb, smin = sa < sc ? sa : sc;
    short2 smad = sa * sb + as_short2(c);
    ushort2 k = a + (ushort2)(3, 5);
    out[i * 8 + 0] = add;
    out[i * 8 + 1] = sub ^ mul;
    out[i * 8 + 2] = mad;
    out[i * 8 + 3] = shl ^ shr;
    out[i * 8 + 4] = as_ushort2(sar) + k;
    out[i * 8 + 5] = umax ^ umin;
    out[i * 8 + 6] = as_ushort2(smax) ^ as_ushort2(smin);
    out[i * 8 + 7] = as_ushort2(smad) - (ushort2)(1, 1);
}
