; Typed buffers: tbuffer loads and stores in 8_8_8_8_UNORM (56), 16_16_UINT (27),
; 8_UINT (5), 16_UNORM (7) and 32_32_32_32_FLOAT (77) (formats from Mesa's GFX10_FORMAT),
; and buffer_load_format through the V#'s FORMAT and DST_SEL.
; s[0:3] = src V#, s[4:7] = dst V#, s[8:11] = fmt V# (buffer_load_format source).
define amdgpu_cs void @main(<4 x i32> inreg %src, <4 x i32> inreg %dst, <4 x i32> inreg %fv, <3 x i32> %lid) {
  %t = extractelement <3 x i32> %lid, i32 0
  %o4 = shl i32 %t, 2
  %o16 = shl i32 %t, 4
  %o2 = shl i32 %t, 1
  ; 8_8_8_8_UNORM at src + 4t -> dst + 16t (4 floats)
  %a = call <4 x float> @llvm.amdgcn.raw.tbuffer.load.v4f32(<4 x i32> %src, i32 %o4, i32 0, i32 56, i32 0)
  call void @llvm.amdgcn.raw.buffer.store.v4f32(<4 x float> %a, <4 x i32> %dst, i32 %o16, i32 0, i32 0)
  ; 16_16_UINT at src + 256 + 4t -> dst + 1024 + 8t
  %b = call <2 x i32> @llvm.amdgcn.raw.tbuffer.load.v2i32(<4 x i32> %src, i32 %o4, i32 256, i32 27, i32 0)
  %o8 = shl i32 %t, 3
  call void @llvm.amdgcn.raw.buffer.store.v2i32(<2 x i32> %b, <4 x i32> %dst, i32 %o8, i32 1024, i32 0)
  ; 8_UINT at src + 512 + t, 16_UNORM at src + 576 + 2t -> dst + 1536 + 8t
  %c = call i32 @llvm.amdgcn.raw.tbuffer.load.i32(<4 x i32> %src, i32 %t, i32 512, i32 5, i32 0)
  %d = call float @llvm.amdgcn.raw.tbuffer.load.f32(<4 x i32> %src, i32 %o2, i32 576, i32 7, i32 0)
  %di = bitcast float %d to i32
  %cd0 = insertelement <2 x i32> undef, i32 %c, i32 0
  %cd = insertelement <2 x i32> %cd0, i32 %di, i32 1
  call void @llvm.amdgcn.raw.buffer.store.v2i32(<2 x i32> %cd, <4 x i32> %dst, i32 %o8, i32 1536, i32 0)
  ; tbuffer stores: the 8_8_8_8 floats back as 8_8_8_8_UNORM at dst + 2048 + 4t, the
  ; 16_16 pair as 16_16_UINT at dst + 2304 + 4t, and 32x4 float at dst + 2560 + 16t
  call void @llvm.amdgcn.raw.tbuffer.store.v4f32(<4 x float> %a, <4 x i32> %dst, i32 %o4, i32 2048, i32 56, i32 0)
  call void @llvm.amdgcn.raw.tbuffer.store.v2i32(<2 x i32> %b, <4 x i32> %dst, i32 %o4, i32 2304, i32 27, i32 0)
  %e = call <4 x float> @llvm.amdgcn.raw.tbuffer.load.v4f32(<4 x i32> %src, i32 %o16, i32 1024, i32 77, i32 0)
  call void @llvm.amdgcn.raw.tbuffer.store.v4f32(<4 x float> %e, <4 x i32> %dst, i32 %o16, i32 2560, i32 77, i32 0)
  ; buffer_load_format_xyzw through the V# (format and DST_SEL from the descriptor)
  %f = call <4 x float> @llvm.amdgcn.struct.buffer.load.format.v4f32(<4 x i32> %fv, i32 %t, i32 0, i32 0, i32 0)
  call void @llvm.amdgcn.raw.buffer.store.v4f32(<4 x float> %f, <4 x i32> %dst, i32 %o16, i32 3584, i32 0)
  ret void
}
declare <4 x float> @llvm.amdgcn.raw.tbuffer.load.v4f32(<4 x i32>, i32, i32, i32, i32)
declare <2 x i32> @llvm.amdgcn.raw.tbuffer.load.v2i32(<4 x i32>, i32, i32, i32, i32)
declare i32 @llvm.amdgcn.raw.tbuffer.load.i32(<4 x i32>, i32, i32, i32, i32)
declare float @llvm.amdgcn.raw.tbuffer.load.f32(<4 x i32>, i32, i32, i32, i32)
declare void @llvm.amdgcn.raw.tbuffer.store.v4f32(<4 x float>, <4 x i32>, i32, i32, i32, i32)
declare void @llvm.amdgcn.raw.tbuffer.store.v2i32(<2 x i32>, <4 x i32>, i32, i32, i32, i32)
declare void @llvm.amdgcn.raw.buffer.store.v4f32(<4 x float>, <4 x i32>, i32, i32, i32)
declare void @llvm.amdgcn.raw.buffer.store.v2i32(<2 x i32>, <4 x i32>, i32, i32, i32)
declare <4 x float> @llvm.amdgcn.struct.buffer.load.format.v4f32(<4 x i32>, i32, i32, i32, i32)
