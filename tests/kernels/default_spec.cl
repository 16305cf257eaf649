// the documented default spec: in = iota u32[64], out = u32[64], one group of 64.
__kernel void default_spec(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    out[i] = in[i] * in[i] + 1u;
}
