#version 450
layout(push_constant) uniform PC { uint sgpr[16]; } pc;
layout(location = 0) out vec4 o;
void main() {
    o = vec4(uintBitsToFloat(pc.sgpr[0]), gl_FragCoord.x * 0.03125, gl_FragCoord.y * 0.03125, 1.0);
}
