; Raw dwordx4 load and store (range-checked per dword), soffset (not range-checked),
; an instruction offset, bytes and shorts, and s_buffer_load of dwords past NUM_RECORDS.
; s[0:3] = src V#, s[4:7] = dst V#, s8 = soffset, s9 = s_buffer_load offset,
; s[12:15] = small V# (bytes/shorts).
define amdgpu_cs void @main(<4 x i32> inreg %src, <4 x i32> inreg %dst, i32 inreg %so, i32 inreg %pad0, i32 inreg %pad1, i32 inreg %pad2, <4 x i32> inreg %sm, <3 x i32> %lid) {
  %t = extractelement <3 x i32> %lid, i32 0
  %o = shl i32 %t, 4
  %o4 = add i32 %o, 4
  %v = call <4 x i32> @llvm.amdgcn.raw.buffer.load.v4i32(<4 x i32> %src, i32 %o4, i32 %so, i32 0)
  call void @llvm.amdgcn.raw.buffer.store.v4i32(<4 x i32> %v, <4 x i32> %dst, i32 %o, i32 %so, i32 0)
  %s0 = call i32 @llvm.amdgcn.s.buffer.load.i32(<4 x i32> %src, i32 8, i32 0)
  %s1 = call <4 x i32> @llvm.amdgcn.s.buffer.load.v4i32(<4 x i32> %src, i32 %pad0, i32 0)
  %a = extractelement <4 x i32> %s1, i32 0
  %b = extractelement <4 x i32> %s1, i32 3
  %sum0 = add i32 %s0, %a
  %sum = xor i32 %sum0, %b
  %bo = add i32 %t, 0
  %by = call i8 @llvm.amdgcn.raw.buffer.load.i8(<4 x i32> %sm, i32 %bo, i32 0, i32 0)
  %bz = sext i8 %by to i32
  %so2 = shl i32 %t, 1
  %sh = call i16 @llvm.amdgcn.raw.buffer.load.i16(<4 x i32> %sm, i32 %so2, i32 0, i32 0)
  %shz = zext i16 %sh to i32
  %m0 = add i32 %bz, %shz
  %m = add i32 %m0, %sum
  call void @llvm.amdgcn.raw.buffer.store.i32(i32 %m, <4 x i32> %dst, i32 %o, i32 2048, i32 0)
  %bt = trunc i32 %t to i8
  %bb = add i8 %bt, 100
  %bso = add i32 %t, 64
  call void @llvm.amdgcn.raw.buffer.store.i8(i8 %bb, <4 x i32> %sm, i32 %bso, i32 0, i32 0)
  ret void
}
declare <4 x i32> @llvm.amdgcn.raw.buffer.load.v4i32(<4 x i32>, i32, i32, i32)
declare void @llvm.amdgcn.raw.buffer.store.v4i32(<4 x i32>, <4 x i32>, i32, i32, i32)
declare void @llvm.amdgcn.raw.buffer.store.i32(i32, <4 x i32>, i32, i32, i32)
declare i32 @llvm.amdgcn.s.buffer.load.i32(<4 x i32>, i32, i32)
declare <4 x i32> @llvm.amdgcn.s.buffer.load.v4i32(<4 x i32>, i32, i32)
declare i8 @llvm.amdgcn.raw.buffer.load.i8(<4 x i32>, i32, i32, i32)
declare i16 @llvm.amdgcn.raw.buffer.load.i16(<4 x i32>, i32, i32, i32)
declare void @llvm.amdgcn.raw.buffer.store.i8(i8, <4 x i32>, i32, i32, i32)
