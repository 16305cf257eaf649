// OpenCL C kernels for the translator tests (compiled by clang-14 for gfx1030 in the test).
__kernel void add(__global const int *a, __global const int *b, __global int *c, uint n) {
  uint i = get_global_id(0);
  if (i < n) c[i] = a[i] * 3 + b[i];
}
__kernel void loop(__global float *a, uint n) {
  uint i = get_global_id(0);
  float s = 0;
  for (uint k = 0; k < i % 7; k++) s += a[k] * 0.5f;
  a[i] = s;
}
__kernel void reduce(__global const uint *a, __global uint *out) {
  __local uint tmp[64];
  uint l = get_local_id(0);
  tmp[l] = a[get_global_id(0)];
  barrier(CLK_LOCAL_MEM_FENCE);
  for (uint s = 32; s > 0; s >>= 1) { if (l < s) tmp[l] += tmp[l + s]; barrier(CLK_LOCAL_MEM_FENCE); }
  if (l == 0) out[get_group_id(0)] = tmp[0];
}
__kernel void atom(__global uint *a, __global ulong *b) {
  uint i = get_global_id(0);
  __atomic_fetch_add(a, i, __ATOMIC_RELAXED);
  b[i] = (ulong)i * 0x100000001ul + b[i];
}
__kernel void imath(__global int *a, __global const uint *b) {
  uint i = get_global_id(0);
  int x = a[i]; uint y = b[i];
  a[i] = (x >> 2) + (int)(y >> (x & 31)) + (x < (int)y ? x : (int)y) + (x > 3 ? x : 3) + (x ^ (int)y) + __builtin_popcount(y) + (y ? __builtin_clz(y) : 32) + (x < 0 ? -x : x) + (int)(y * 2654435761u);
}
__kernel void fmath(__global float *a, __global const float *b, float k) {
  uint i = get_global_id(0);
  float x = a[i], y = b[i];
  a[i] = (x * y + k) - __builtin_fminf(x, y) + __builtin_fabsf(x) * (x > y ? 2.0f : -3.0f) + (float)(int)i + (float)(i >> 3) + __builtin_sqrtf(__builtin_fabsf(y)) + __builtin_floorf(x);
}
__kernel void d64(__global double *a, __global long *b) {
  uint i = get_global_id(0);
  a[i] = a[i] * 1.5 + (double)(int)b[i];
  b[i] = b[i] * 3 + (b[i] >> 3) + (long)i;
}
__kernel void sw(__global int *a) {
  uint i = get_global_id(0);
  int r;
  switch (a[i] & 7) { case 0: r = 10; break; case 1: r = a[i] * 2; break; case 2: r = -1; break; case 5: r = 77; break; default: r = 3; }
  for (int k = 0; k < 10; k++) { if (k == (int)(i & 3)) continue; if (r > 1000) break; r += k; }
  a[i] = r;
}
__kernel void chase(__global ulong *next, __global uint *out) {
  uint i = get_global_id(0);
  __global ulong *p = (__global ulong *)next[i];
  uint n = 0;
  while (p) { p = (__global ulong *)*p; n++; }
  out[i] = n;
}
__kernel void xlane(__global uint *a) {
  uint i = get_global_id(0);
  uint v = a[i];
  a[i] = v + __builtin_amdgcn_readfirstlane(v);
}
