// global atomic min, max, and, or, xor.
__kernel void atomic_global_minmax(__global const uint *in, __global uint *r) {
    uint x = in[get_global_id(0)];
    atomic_min(&r[0], x);
    atomic_max(&r[1], x);
    atomic_and(&r[2], x | 0x0f0f0f0fu);
    atomic_or(&r[3], x & 0x10101010u);
    atomic_xor(&r[4], x);
    atomic_min((__global int *)&r[5], (int)x);
    atomic_max((__global int *)&r[6], (int)x);
}
