#version 460
// GLSL twin of tests/kernels/loop_divergent.cl: per-invocation trip counts.
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430) readonly buffer U32In { uint v[]; };
layout(buffer_reference, std430) writeonly buffer U32Out { uint v[]; };
layout(push_constant) uniform Args { U32In in_; U32Out out_; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint n = p.in_.v[i] % 50u, acc = 1u;
    for (uint k = 0u; k < n; k++) acc = acc * 3u + k;
    p.out_.v[i] = acc;
}
