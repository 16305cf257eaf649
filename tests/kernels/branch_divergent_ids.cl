// branches on the lane id (half a wave each way), EXEC masking.
__kernel void branch_divergent_ids(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i];
    if (get_local_id(0) % 3 == 0) x += 1000u;
    else if (get_local_id(0) < 20) x *= 2u;
    if (get_local_id(0) >= 40) out[i] = x; else out[i] = x + 1u;
}
