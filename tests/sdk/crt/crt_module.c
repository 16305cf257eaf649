/* Module stub of a fixture PRX (aps5 fixture SDK): the module param and default entry points.
 * A module source may define module_start / module_stop itself; these weak ones return 0. */
#include <stddef.h>

__attribute__((weak)) int module_start(size_t args, const void *argp) {
  (void)args;
  (void)argp;
  return 0;
}

__attribute__((weak)) int module_stop(size_t args, const void *argp) {
  (void)args;
  (void)argp;
  return 0;
}

/* A relocated pointer in .data.rel.ro, so that every module has a relro segment
 * (PT_SCE_RELRO / PT_GNU_RELRO) like the files made by Sony's and OpenOrbis's tools. */
static const char module_kind[] = "aps5-fixture-module";
__attribute__((used, section(".data.rel.ro"))) static const char *const aps5_relro_anchor = module_kind;

/* Module param (PT_SCE_MODULE_PARAM). */
struct aps5_module_param {
  unsigned long size;
  unsigned int magic;
  unsigned int version;
#ifdef APS5_PS4
  unsigned long sdk_version;
#else
  unsigned int flags;
  unsigned int sdk_version;
#endif
};
_Static_assert(sizeof(struct aps5_module_param) == 0x18, "module param is 0x18 bytes");
#ifdef APS5_PS4
__attribute__((section(".sce_module_param"), used, aligned(8), visibility("hidden"))) const struct aps5_module_param sceModuleParam = {
    0x18, 0x3C13F4BF, 1, 0x04508101};
#else
__attribute__((section(".sce_module_param"), used, aligned(8), visibility("hidden"))) const struct aps5_module_param sceModuleParam = {
    0x18, 0x3C13F4BF, 1, 0, 0x02000000};
#endif
