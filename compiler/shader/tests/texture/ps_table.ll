; The T# and S# from a descriptor table: s[0:1] points at a table whose dword pair at +16 is
; a pointer to the T# (at +0x40) and S# (at +0x60) (two levels of pointer loads).
define amdgpu_ps void @ps(i8 addrspace(4)* inreg %tab, i32 inreg %prim, <2 x float> %a, <2 x float> %pc) {
  %i = extractelement <2 x float> %pc, i32 0
  %j = extractelement <2 x float> %pc, i32 1
  %u1 = call float @llvm.amdgcn.interp.p1(float %i, i32 0, i32 0, i32 %prim)
  %u = call float @llvm.amdgcn.interp.p2(float %u1, float %j, i32 0, i32 0, i32 %prim)
  %v1 = call float @llvm.amdgcn.interp.p1(float %i, i32 1, i32 0, i32 %prim)
  %v = call float @llvm.amdgcn.interp.p2(float %v1, float %j, i32 1, i32 0, i32 %prim)
  %pp = getelementptr i8, i8 addrspace(4)* %tab, i64 16
  %ppc = bitcast i8 addrspace(4)* %pp to i8 addrspace(4)* addrspace(4)*
  %inner = load i8 addrspace(4)*, i8 addrspace(4)* addrspace(4)* %ppc, align 8
  %tp = getelementptr i8, i8 addrspace(4)* %inner, i64 64
  %tpc = bitcast i8 addrspace(4)* %tp to <8 x i32> addrspace(4)*
  %t = load <8 x i32>, <8 x i32> addrspace(4)* %tpc, align 32
  %sp = getelementptr i8, i8 addrspace(4)* %inner, i64 96
  %spc = bitcast i8 addrspace(4)* %sp to <4 x i32> addrspace(4)*
  %s = load <4 x i32>, <4 x i32> addrspace(4)* %spc, align 16
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
