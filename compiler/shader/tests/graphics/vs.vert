#version 450
// Reference for vs.ll.
layout(location = 0) out vec4 col;
layout(location = 1) out vec4 extra;
void main() {
    int v = gl_VertexIndex;
    vec2 p = v == 0 ? vec2(-0.75, -0.5) : v == 1 ? vec2(0.75, -0.75) : vec2(-0.5, 0.875);
    float z = v == 0 ? 0.25 : v == 1 ? 0.5 : 0.75;
    float w = v == 0 ? 1.0 : v == 1 ? 2.0 : 1.5;
    p.x += float(gl_InstanceIndex) * 0.25;
    gl_Position = vec4(p * w, z * w, w);
    col = vec4(v == 0 ? 1.0 : 0.0, v == 1 ? 1.0 : 0.0, v >= 2 ? 1.0 : 0.0, 1.0);
    float f = float(v);
    extra = vec4(f, f * 0.25, 1.0 - f * 0.5, 1.0);
}
