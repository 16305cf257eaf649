#version 460
// GLSL twin of tests/kernels/stencil_2d_n.cl: 5-point Jacobi step, fixed borders, the same
// left-to-right sum (`precise`: no reassociation or contraction).
#extension GL_EXT_buffer_reference : require
layout(local_size_x = 8, local_size_y = 8) in;
layout(buffer_reference, std430) readonly buffer F32In { float v[]; };
layout(buffer_reference, std430) writeonly buffer F32Out { float v[]; };
layout(push_constant) uniform Args { F32In in_; F32Out out_; } p;
void main() {
    int x = int(gl_GlobalInvocationID.x), y = int(gl_GlobalInvocationID.y);
    int w = int(gl_NumWorkGroups.x * gl_WorkGroupSize.x);
    int h = int(gl_NumWorkGroups.y * gl_WorkGroupSize.y);
    int i = y * w + x;
    if (x == 0 || y == 0 || x == w - 1 || y == h - 1) { p.out_.v[i] = p.in_.v[i]; return; }
    precise float sum = p.in_.v[i] + p.in_.v[i - 1] + p.in_.v[i + 1] + p.in_.v[i - w] + p.in_.v[i + w];
    precise float r = 0.2 * sum;
    p.out_.v[i] = r;
}
