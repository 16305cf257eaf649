// Integer add and multiply of two buffers, with a guard for the tail.
__kernel void int_add(__global const uint *a, __global const uint *b, __global uint *out, uint n) {
    size_t i = get_global_id(0);
    if (i < n)
        out[i] = a[i] + b[i] * 3u;
}
