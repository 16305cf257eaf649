#version 460
// GLSL twin of tests/kernels/matmul_n.cl. `precise`: no contraction into fma (the OpenCL
// build uses -ffp-contract=off, and the spec's bound is 0 ULP).
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 16, local_size_y = 4) in;
layout(buffer_reference, std430) readonly buffer F32In { float v[]; };
layout(buffer_reference, std430) writeonly buffer F32Out { float v[]; };
layout(push_constant) uniform Args { F32In a; F32In b; F32Out c; uint n; } p;
void main() {
    uint x = gl_GlobalInvocationID.x, y = gl_GlobalInvocationID.y, n = p.n;
    precise float s = 0.0;
    for (uint k = 0u; k < n; k++) {
        precise float m = p.a.v[y * n + k] * p.b.v[k * n + x];
        s += m;
    }
    p.c.v[y * n + x] = s;
}
