; Discard (llvm.amdgcn.kill: EXEC cleared, then a vm export without the lane) where the
; interpolated red is below 0.375.
define amdgpu_ps void @ps(i32 inreg %c0, i32 inreg %prim, <2 x float> %unused_sample, <2 x float> %pc) {
  %i = extractelement <2 x float> %pc, i32 0
  %j = extractelement <2 x float> %pc, i32 1
  %r1 = call float @llvm.amdgcn.interp.p1(float %i, i32 0, i32 0, i32 %prim)
  %r = call float @llvm.amdgcn.interp.p2(float %r1, float %j, i32 0, i32 0, i32 %prim)
  %g1 = call float @llvm.amdgcn.interp.p1(float %i, i32 1, i32 0, i32 %prim)
  %g = call float @llvm.amdgcn.interp.p2(float %g1, float %j, i32 1, i32 0, i32 %prim)
  %keep = fcmp oge float %r, 0.375
  call void @llvm.amdgcn.kill(i1 %keep)
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %r, float %g, float 0.0, float 1.0, i1 true, i1 true)
  ret void
}
declare float @llvm.amdgcn.interp.p1(float, i32, i32, i32)
declare float @llvm.amdgcn.interp.p2(float, float, i32, i32, i32)
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
declare void @llvm.amdgcn.kill(i1)
