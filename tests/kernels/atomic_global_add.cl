// global atomic add into a few counters from every lane.
__kernel void atomic_global_add(__global const uint *in, __global uint *counters) {
    uint x = in[get_global_id(0)];
    atomic_add(&counters[x % 8u], x & 0xffffu);
    atomic_inc(&counters[8]);
}
