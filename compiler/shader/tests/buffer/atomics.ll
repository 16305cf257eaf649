; Buffer atomics: raw add (returning), structured cmpswap, and a 64-bit add, each range
; checked all or nothing. s[0:3] = counter V#, s[4:7] = dst V# (old values), s[8:11] =
; structured V# for cmpswap.
define amdgpu_cs void @main(<4 x i32> inreg %cnt, <4 x i32> inreg %dst, <4 x i32> inreg %sv, <3 x i32> %lid) {
  %t = extractelement <3 x i32> %lid, i32 0
  %o4 = shl i32 %t, 2
  %slot = and i32 %t, 7
  %so = shl i32 %slot, 2
  %v = add i32 %t, 1
  %old = call i32 @llvm.amdgcn.raw.buffer.atomic.add.i32(i32 %v, <4 x i32> %cnt, i32 %so, i32 0, i32 0)
  call void @llvm.amdgcn.raw.buffer.store.i32(i32 %old, <4 x i32> %dst, i32 %o4, i32 0, i32 0)
  %new = or i32 %t, 65536
  %prev = call i32 @llvm.amdgcn.struct.buffer.atomic.cmpswap.i32(i32 %new, i32 %t, <4 x i32> %sv, i32 %t, i32 0, i32 0, i32 0)
  call void @llvm.amdgcn.raw.buffer.store.i32(i32 %prev, <4 x i32> %dst, i32 %o4, i32 512, i32 0)
  %w = zext i32 %v to i64
  %w2 = shl i64 %w, 33
  %o64 = call i64 @llvm.amdgcn.raw.buffer.atomic.add.i64(i64 %w2, <4 x i32> %cnt, i32 64, i32 0, i32 0)
  ret void
}
declare i32 @llvm.amdgcn.raw.buffer.atomic.add.i32(i32, <4 x i32>, i32, i32, i32)
declare i64 @llvm.amdgcn.raw.buffer.atomic.add.i64(i64, <4 x i32>, i32, i32, i32)
declare i32 @llvm.amdgcn.struct.buffer.atomic.cmpswap.i32(i32, i32, <4 x i32>, i32, i32, i32, i32)
declare void @llvm.amdgcn.raw.buffer.store.i32(i32, <4 x i32>, i32, i32, i32)
