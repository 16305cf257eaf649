#define get_local_id(d) ((d)==0?__builtin_amdgcn_workitem_id_x():(d)==1?__builtin_amdgcn_workitem_id_y():__builtin_amdgcn_workitem_id_z())
#define get_group_id(d) ((d)==0?__builtin_amdgcn_workgroup_id_x():(d)==1?__builtin_amdgcn_workgroup_id_y():__builtin_amdgcn_workgroup_id_z())
static inline uint shim_local_size(uint d) { __constant unsigned short *p = (__constant unsigned short *)__builtin_amdgcn_dispatch_ptr(); return p[2 + d]; }
#define get_local_size(d) shim_local_size(d)
#define get_global_id(d) (get_group_id(d) * get_local_size(d) + get_local_id(d))
#define barrier(f) do { __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup"); __builtin_amdgcn_s_barrier(); __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup"); } while (0)
