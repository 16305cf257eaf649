// global, local and group ids and sizes in a 3-D dispatch.
__kernel void ids_3d(__global uint *out) {
    size_t gx = get_global_id(0), gy = get_global_id(1), gz = get_global_id(2);
    size_t idx = (gz * get_global_size(1) + gy) * get_global_size(0) + gx;
    out[idx] = (uint)(get_local_id(0) | get_local_id(1) << 4 | get_local_id(2) << 8 |
                      get_group_id(0) << 12 | get_group_id(1) << 16 | get_group_id(2) << 20 |
                      get_local_size(0) << 24 | get_num_groups(2) << 28);
}
