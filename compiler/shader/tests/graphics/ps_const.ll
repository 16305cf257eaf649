; A constant colour, 32-bit export (SPI_SHADER_32_ABGR).
define amdgpu_ps void @ps(i32 inreg %c0, i32 inreg %prim) {
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float 0.25, float 0.5, float 0.75, float 1.0, i1 true, i1 true)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
