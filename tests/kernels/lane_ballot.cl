// ballots through v_cmp into an SGPR pair, counted and masked.
__kernel void lane_ballot(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    uint x = in[i];
    ulong b = aps5_wave_ballot(x & 1u);
    ulong c = aps5_wave_ballot(x > 0x80000000u);
    out[i] = (uint)__builtin_popcountl(b) * 1000u + (uint)__builtin_popcountl(b & c) + (uint)(b >> (aps5_lane_id() & 31));
}
