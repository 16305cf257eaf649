// reads and writes past the end of its buffer: must end with a fault report.
__kernel void oob_fault(__global const uint *in, __global uint *out) {
    size_t i = get_global_id(0);
    out[i + 4096] = in[i + 100000];
}
