; Structured buffer load and store: record = the lane, byte offset %k inside it.
; s[0:3] = src V#, s[4:7] = dst V# (raw), s[8:11] = st V# (structured), s12 = k.
define amdgpu_cs void @main(<4 x i32> inreg %src, <4 x i32> inreg %dst, <4 x i32> inreg %st, i32 inreg %k, <3 x i32> %lid) {
  %t = extractelement <3 x i32> %lid, i32 0
  %v = call i32 @llvm.amdgcn.struct.buffer.load.i32(<4 x i32> %src, i32 %t, i32 %k, i32 0, i32 0)
  %o = shl i32 %t, 2
  call void @llvm.amdgcn.raw.buffer.store.i32(i32 %v, <4 x i32> %dst, i32 %o, i32 0, i32 0)
  %w = or i32 %t, 20480
  call void @llvm.amdgcn.struct.buffer.store.i32(i32 %w, <4 x i32> %st, i32 %t, i32 %k, i32 0, i32 0)
  ret void
}
declare i32 @llvm.amdgcn.struct.buffer.load.i32(<4 x i32>, i32, i32, i32, i32)
declare void @llvm.amdgcn.raw.buffer.store.i32(i32, <4 x i32>, i32, i32, i32)
declare void @llvm.amdgcn.struct.buffer.store.i32(i32, <4 x i32>, i32, i32, i32, i32)
