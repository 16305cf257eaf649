; image_sample_lz with dmask 0x5 (red and blue into two VGPRs) and image_sample_l with dmask
; 0x8 (alpha) at LOD 0.0 from s[10]: exported as (r_lz, 0.25, b_lz, a_l).
define amdgpu_ps void @ps(<8 x i32> inreg %t, <4 x i32> inreg %s, i32 inreg %prim, <2 x float> %a, <2 x float> %pc) {
  %i = extractelement <2 x float> %pc, i32 0
  %j = extractelement <2 x float> %pc, i32 1
  %u1 = call float @llvm.amdgcn.interp.p1(float %i, i32 0, i32 0, i32 %prim)
  %u = call float @llvm.amdgcn.interp.p2(float %u1, float %j, i32 0, i32 0, i32 %prim)
  %v1 = call float @llvm.amdgcn.interp.p1(float %i, i32 1, i32 0, i32 %prim)
  %v = call float @llvm.amdgcn.interp.p2(float %v1, float %j, i32 1, i32 0, i32 %prim)
  %rb = call <2 x float> @llvm.amdgcn.image.sample.lz.2d.v2f32.f32(i32 5, float %u, float %v, <8 x i32> %t, <4 x i32> %s, i1 false, i32 0, i32 0)
  %al = call float @llvm.amdgcn.image.sample.l.2d.f32.f32(i32 8, float %u, float %v, float 0.0, <8 x i32> %t, <4 x i32> %s, i1 false, i32 0, i32 0)
  %r0 = extractelement <2 x float> %rb, i32 0
  %r2 = extractelement <2 x float> %rb, i32 1
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %r0, float 0.25, float %r2, float %al, i1 true, i1 true)
  ret void
}
declare float @llvm.amdgcn.interp.p1(float, i32, i32, i32)
declare float @llvm.amdgcn.interp.p2(float, float, i32, i32, i32)
declare <2 x float> @llvm.amdgcn.image.sample.lz.2d.v2f32.f32(i32, float, float, <8 x i32>, <4 x i32>, i1, i32, i32)
declare float @llvm.amdgcn.image.sample.l.2d.f32.f32(i32, float, float, float, <8 x i32>, <4 x i32>, i1, i32, i32)
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
