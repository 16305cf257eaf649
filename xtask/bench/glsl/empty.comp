#version 460
// The empty-dispatch baseline of `cargo xtask bench glsl`: submit + wait with no work.
layout(local_size_x = 1) in;
void main() {}
