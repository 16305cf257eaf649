#version 450
// Reference for ps_linear.ll when SPI_PS_INPUT_CNTL_0 selects DEFAULT_VAL 2 = (1, 1, 1, 0).
layout(location = 0) out vec4 o;
void main() { o = vec4(1.0, 1.0, 1.0, 1.0); }
