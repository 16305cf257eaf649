; Vertex shader for every draw: a triangle from VertexID (no vertex buffers), clip-space
; w 1, 2, 1.5 so perspective and linear interpolation differ; param0 = a colour per vertex,
; param1 = values derived from the vertex index (read flat by the pixel shaders); instance n
; moves the triangle n/4 to the right.
define amdgpu_vs void @vs(i32 inreg %s0, i32 %vid, i32 %u1, i32 %u2, i32 %iid) {
  %is0 = icmp eq i32 %vid, 0
  %is1 = icmp eq i32 %vid, 1
  %x1 = select i1 %is1, float 0.75, float -0.5
  %x = select i1 %is0, float -0.75, float %x1
  %y1 = select i1 %is1, float -0.75, float 0.875
  %y = select i1 %is0, float -0.5, float %y1
  %z1 = select i1 %is1, float 0.5, float 0.75
  %z = select i1 %is0, float 0.25, float %z1
  %w1 = select i1 %is1, float 2.0, float 1.5
  %w = select i1 %is0, float 1.0, float %w1
  %if = uitofp i32 %iid to float
  %dx = fmul float %if, 0.25
  %xi = fadd float %x, %dx
  %xc = fmul float %xi, %w
  %yc = fmul float %y, %w
  %zc = fmul float %z, %w
  call void @llvm.amdgcn.exp.f32(i32 12, i32 15, float %xc, float %yc, float %zc, float %w, i1 false, i1 false)
  %r = select i1 %is0, float 1.0, float 0.0
  %g = select i1 %is1, float 1.0, float 0.0
  %rg = or i1 %is0, %is1
  %b = select i1 %rg, float 0.0, float 1.0
  call void @llvm.amdgcn.exp.f32(i32 32, i32 15, float %r, float %g, float %b, float 1.0, i1 false, i1 false)
  %vf = uitofp i32 %vid to float
  %q = fmul float %vf, 0.25
  %h = fmul float %vf, 0.5
  %hm = fsub float 1.0, %h
  call void @llvm.amdgcn.exp.f32(i32 33, i32 15, float %vf, float %q, float %hm, float 1.0, i1 true, i1 false)
  ret void
}
declare void @llvm.amdgcn.exp.f32(i32, i32, float, float, float, float, i1, i1)
