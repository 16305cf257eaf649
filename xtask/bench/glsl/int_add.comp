#version 460
// GLSL twin of tests/kernels/int_add.cl for `cargo xtask bench glsl`: plain device addresses
// in push constants, one invocation per work-item, the spec's local size.
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430) readonly buffer U32In { uint v[]; };
layout(buffer_reference, std430) writeonly buffer U32Out { uint v[]; };
layout(push_constant) uniform Args { U32In a; U32In b; U32Out out_; uint n; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    if (i < p.n)
        p.out_.v[i] = p.a.v[i] + p.b.v[i] * 3u;
}
