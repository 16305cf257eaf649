#version 450
layout(location = 0) out vec4 o;
void main() {
    gl_FragDepth = gl_FragCoord.z * 0.5;
    o = vec4((1.0 / gl_FragCoord.w) * 0.25, gl_FrontFacing ? 1.0 : 0.0, 0.5, 1.0);
}
