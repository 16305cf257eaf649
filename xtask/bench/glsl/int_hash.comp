#version 460
// GLSL twin of tests/kernels/int_hash.cl: a long dependent integer chain per work-item.
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 64) in;
layout(buffer_reference, std430) readonly buffer U32In { uint v[]; };
layout(buffer_reference, std430) writeonly buffer U32Out { uint v[]; };
layout(push_constant) uniform Args { U32In in_; U32Out out_; } p;
void main() {
    uint i = gl_GlobalInvocationID.x;
    uint h = p.in_.v[i] ^ 0x811c9dc5u;
    for (int r = 0; r < 16; r++) {
        h ^= h >> 16; h *= 0x7feb352du; h ^= h >> 15; h *= 0x846ca68bu; h ^= h >> 16;
        h += uint(r);
    }
    p.out_.v[i] = h;
}
