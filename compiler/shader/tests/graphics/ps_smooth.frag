#version 450
layout(location = 0) in vec4 col;
layout(location = 0) out vec4 o;
void main() { o = vec4(col.rgb, 1.0); }
