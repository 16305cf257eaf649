; image_sample (implicit LOD) of the texture whose T# is s[0:7] and S# s[8:11] (user data),
; at the interpolated uv of input 0; the four components exported to mrt0.
define amdgpu_ps void @ps(<8 x i32> inreg %t, <4 x i32> inreg %s, i32 inreg %prim, <2 x float> %a, <2 x float> %pc) {
  %i = extractelement <2 x float> %pc, i32 0
  %j = extractelement <2 x float> %pc, i32 1
  %u1 = call float @llvm.amdgcn.interp.p1(float %i, i32 0, i32 0, i32 %prim)
  %u = call float @llvm.amdgcn.interp.p2(float %u1, float %j, i32 0, i32 0, i32 %prim)
  %v1 = call float @llvm.amdgcn.interp.p1(float %i, i32 1, i32 0, i32 %prim)
  %v = call float @llvm.amdgcn.interp.p2(float %v1, float %j, i32 1, i32 0, i32 %prim)
  %r = call <4 x float> @llvm.amdgcn.image.sample.2d.v4f32.f32(i32 15, float %u, float %v, <8 x i32> %t, <4 x i32> %s, i1 false, i32 0, i32 0)
  %r0 = extractelement <4 x float> %r, i32 0
  %r1 = extractelement <4 x float> %r, i32 1
  %r2 = extractelement <4 x float> %r, i32 2
  %r3 = extractelement <4 x float> %r, i32 3
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %r0, float %r1, float %r2, float %r3, i1 true, i1 true)
  ret void
}
declare float @llvm.amdgcn.interp.p1(float, i32, i32, i32)
declare float @llvm.amdgcn.interp.p2(float, float, i32, i32, i32)
declare <4 x float> @llvm.amdgcn.image.sample.2d.v4f32.f32(i32, float, float, <8 x i32>, <4 x i32>, i1, i32, i32)
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
