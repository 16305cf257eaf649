; Perspective-correct colour (PERSP_CENTER i/j), exported as f16 pairs (v_cvt_pkrtz, compr).
define amdgpu_ps void @ps(i32 inreg %c0, i32 inreg %prim, <2 x float> %unused_sample, <2 x float> %pc) {
  %i = extractelement <2 x float> %pc, i32 0
  %j = extractelement <2 x float> %pc, i32 1
  %r1 = call float @llvm.amdgcn.interp.p1(float %i, i32 0, i32 0, i32 %prim)
  %r = call float @llvm.amdgcn.interp.p2(float %r1, float %j, i32 0, i32 0, i32 %prim)
  %g1 = call float @llvm.amdgcn.interp.p1(float %i, i32 1, i32 0, i32 %prim)
  %g = call float @llvm.amdgcn.interp.p2(float %g1, float %j, i32 1, i32 0, i32 %prim)
  %b1 = call float @llvm.amdgcn.interp.p1(float %i, i32 2, i32 0, i32 %prim)
  %b = call float @llvm.amdgcn.interp.p2(float %b1, float %j, i32 2, i32 0, i32 %prim)
  %p0 = call <2 x half> @llvm.amdgcn.cvt.pkrtz(float %r, float %g)
  %p1 = call <2 x half> @llvm.amdgcn.cvt.pkrtz(float %b, float 1.0)
  call void @llvm.amdgcn.exp.compr.v2f16(i32 0, i32 15, <2 x half> %p0, <2 x half> %p1, i1 true, i1 true)
  ret void
}
declare float @llvm.amdgcn.interp.p1(float, i32, i32, i32)
declare float @llvm.amdgcn.interp.p2(float, float, i32, i32, i32)
declare <2 x half> @llvm.amdgcn.cvt.pkrtz(float, float)
declare void @llvm.amdgcn.exp.compr.v2f16(i32, i32, <2 x half>, <2 x half>, i1, i1)
