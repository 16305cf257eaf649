#version 450
layout(location = 0) in vec4 col;
layout(location = 1) flat in vec4 extra;
layout(location = 0) out vec4 o;
void main() { o = vec4(extra.x * 0.5, extra.y, col.g, extra.z); }
