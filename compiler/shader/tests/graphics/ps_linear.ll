; Screen-space linear colour (LINEAR_CENTER i/j), 32-bit export.
define amdgpu_ps void @ps(i32 inreg %c0, i32 inreg %prim, <2 x float> %a, <2 x float> %b, <2 x float> %c, <3 x float> %d, <2 x float> %e, <2 x float> %lc) {
  %i = extractelement <2 x float> %lc, i32 0
  %j = extractelement <2 x float> %lc, i32 1
  %r1 = call float @llvm.amdgcn.interp.p1(float %i, i32 0, i32 0, i32 %prim)
  %r = call float @llvm.amdgcn.interp.p2(float %r1, float %j, i32 0, i32 0, i32 %prim)
  %g1 = call float @llvm.amdgcn.interp.p1(float %i, i32 1, i32 0, i32 %prim)
  %g = call float @llvm.amdgcn.interp.p2(float %g1, float %j, i32 1, i32 0, i32 %prim)
  %b1 = call float @llvm.amdgcn.interp.p1(float %i, i32 2, i32 0, i32 %prim)
  %bb = call float @llvm.amdgcn.interp.p2(float %b1, float %j, i32 2, i32 0, i32 %prim)
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %r, float %g, float %bb, float 1.0, i1 true, i1 true)
  ret void
}
declare float @llvm.amdgcn.interp.p1(float, i32, i32, i32)
declare float @llvm.amdgcn.interp.p2(float, float, i32, i32, i32)
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
