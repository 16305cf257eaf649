; Depth export (exp mrtz) from POS_Z_FLOAT, colour from POS_W_FLOAT and FRONT_FACE.
define amdgpu_ps void @ps(i32 inreg %c0, i32 inreg %prim, <2 x float> %a, <2 x float> %pc, <2 x float> %c, <3 x float> %d, <2 x float> %e, <2 x float> %f, <2 x float> %g, float %st, float %px, float %py, float %pz, float %pw, float %ff) {
  %z = fmul float %pz, 0.5
  %wr = fmul float %pw, 0.25
  %front = fcmp ogt float %ff, 0.0
  %fc = select i1 %front, float 1.0, float 0.0
  call void @llvm.amdgcn.exp.f32(i32 8, i32 1, float %z, float undef, float undef, float undef, i1 false, i1 false)
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %wr, float %fc, float 0.5, float 1.0, i1 true, i1 true)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
