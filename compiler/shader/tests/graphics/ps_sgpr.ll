; A constant from user SGPR s0 (push constants) and POS_X_FLOAT/POS_Y_FLOAT.
define amdgpu_ps void @ps(i32 inreg %c0, i32 inreg %prim, <2 x float> %a, <2 x float> %pc, <2 x float> %c, <3 x float> %d, <2 x float> %e, <2 x float> %f, <2 x float> %g, float %st, float %px, float %py) {
  %k = bitcast i32 %c0 to float
  %x = fmul float %px, 0.03125
  %y = fmul float %py, 0.03125
  call void @llvm.amdgcn.exp.f32(i32 0, i32 15, float %k, float %x, float %y, float 1.0, i1 true, i1 true)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
