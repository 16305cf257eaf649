// LDS atomics (add, max, xchg-free) then one write per group.
__kernel void atomic_local(__global const uint *in, __global uint *out) {
    __local uint sum, mx, orv;
    if (get_local_id(0) == 0) { sum = 0; mx = 0; orv = 0; }
    barrier(CLK_LOCAL_MEM_FENCE);
    uint x = in[get_global_id(0)];
    atomic_add(&sum, x);
    atomic_max(&mx, x);
    atomic_or(&orv, 1u << (x % 32u));
    barrier(CLK_LOCAL_MEM_FENCE);
    if (get_local_id(0) == 0) {
        out[3 * get_group_id(0)] = sum;
        out[3 * get_group_id(0) + 1] = mx;
        out[3 * get_group_id(0) + 2] = orv;
    }
}
