// Hillis-Steele inclusive prefix sum in LDS (double buffered).
__kernel void scan_inclusive(__global const uint *in, __global uint *out) {
    __local uint buf[2][64];
    size_t l = get_local_id(0);
    uint p = 0;
    buf[0][l] = in[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint off = 1; off < 64; off <<= 1) {
        uint v = buf[p][l];
        if (l >= off) v += buf[p][l - off];
        buf[p ^ 1][l] = v;
        p ^= 1;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    out[get_global_id(0)] = buf[p][l];
}
