#version 450
layout(location = 0) in vec4 col;
layout(location = 0) out vec4 o;
void main() {
    if (!(col.r >= 0.375)) discard;
    o = vec4(col.r, col.g, 0.0, 1.0);
}
