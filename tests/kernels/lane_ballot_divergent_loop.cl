// a loop that runs while any lane of the wave still has work (ballot as loop condition).
__kernel void lane_ballot_divergent_loop(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    /* Lane 0 of every wave has the most work, so every wave runs 23 rounds (the host emulation
     * synchronises the whole workgroup, so all waves must make the same number of calls). */
    uint left = aps5_lane_id() == 0 ? 22u : in[i] % 23u, acc = 0, rounds = 0;
    while (aps5_wave_ballot(left != 0u) != 0) {
        if (left) { acc += left * 7u; left--; }
        rounds++;
    }
    out[i] = acc ^ (rounds << 20);
}
