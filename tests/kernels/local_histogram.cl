// a 16-bin histogram with LDS atomics, then global atomics.
__kernel void local_histogram(__global const uint *in, __global uint *hist) {
    __local uint bins[16];
    size_t l = get_local_id(0);
    if (l < 16) bins[l] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    atomic_add(&bins[in[get_global_id(0)] % 16u], 1u);
    barrier(CLK_LOCAL_MEM_FENCE);
    if (l < 16) atomic_add(&hist[l], bins[l]);
}
