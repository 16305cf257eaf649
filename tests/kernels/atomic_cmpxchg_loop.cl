// a compare-and-swap retry loop implementing atomic multiply-add.
__kernel void atomic_cmpxchg_loop(__global const uint *in, __global uint *cell) {
    uint x = in[get_global_id(0)] | 1u;
    uint old = cell[get_global_id(0) % 4], seen;
    while ((seen = atomic_cmpxchg(&cell[get_global_id(0) % 4], old, old + x)) != old) old = seen;
}
