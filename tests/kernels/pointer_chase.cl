// 64-bit pointer chasing: follow per-lane chains of indices through a table.
__kernel void pointer_chase(__global const uint *next, __global uint *out) {
    size_t i = get_global_id(0);
    __global const uint *p = next + i;
    uint sum = 0;
    for (int k = 0; k < 20; k++) { sum += *p; p = next + *p; }
    out[i] = sum ^ (uint)(p - next);
}
