#version 460
// GLSL twin of tests/kernels/reduce_sum.cl: tree reduction of a workgroup in shared memory.
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430) readonly buffer U32In { uint v[]; };
layout(buffer_reference, std430) writeonly buffer U32Out { uint v[]; };
layout(push_constant) uniform Args { U32In in_; U32Out out_; } p;
shared uint s[64];
void main() {
    uint l = gl_LocalInvocationID.x;
    s[l] = p.in_.v[gl_GlobalInvocationID.x];
    barrier();
    for (uint step = 32u; step > 0u; step >>= 1) {
        if (l < step) s[l] += s[l + step];
        barrier();
    }
    if (l == 0u) p.out_.v[gl_WorkGroupID.x] = s[0];
}
