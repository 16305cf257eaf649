; A flat attribute: v_interp_mov P0 of input 1 (SPI_PS_INPUT_CNTL_1.FLAT_SHADE), and input 0
; perspective-interpolated, in one 32-bit export (alpha = flat z = 1 - v/2).
define amdgpu_ps void @ps(i32 inreg %c0, i32 inreg %prim, <2 x float> %unused_sample, <2 x float> %pc) {
  %i = extractelement <2 x float> %pc, i32 0
  %j = extractelement <2 x float> %pc, i32 1
  %x = call float @llvm.amdgcn.interp.mov(i32 2, i32 0, i32 1, i32 %prim)
  %y = call float @llvm.amdgcn.interp.mov(i32 2, i32 1, i32 1, i32 %prim)
  %z = call float @llvm.amdgcn.interp.mov(i32 2, i32 2, i32 1, i32 %prim)
  %g1 = call float @llvm.amdgcn.interp.p1(float %i, i32 1, i32 0, i32 %prim)
  %g = call float @llvm.amdgcn.interp.p2(float %g1, float %j, i32 1, i32 0, i32 %prim)
  %xs = fmul float %x, 0.5
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %xs, float %y, float %g, float %z, i1 true, i1 true)
  ret void
}
declare float @llvm.amdgcn.interp.mov(i32, i32, i32, i32)
declare float @llvm.amdgcn.interp.p1(float, i32, i32, i32)
declare float @llvm.amdgcn.interp.p2(float, float, i32, i32, i32)
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
