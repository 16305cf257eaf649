// an array of structs: mixed-width fields, strided access.
typedef struct { uint key; float w; ulong tag; uchar flags; } item;
__kernel void struct_access(__global const item *items, __global uint *out) {
    size_t i = get_global_id(0);
    item it = items[(i * 7) % 32];
    uint r = it.key ^ (uint)it.tag ^ (uint)(it.tag >> 32) ^ it.flags;
    out[i] = r + (uint)(int)(it.w * 16.0f);
}
