/* Added to a natively built module that the eboot links against: the console's loader starts
 * such modules before main, so run module_start / module_stop from the constructor lists.
 * The weak defaults stand in for the SDK's crt_module.c. Protected: a module without its own
 * module_start must call this default, not the one of a module it links against. */
#include <stddef.h>
__attribute__((weak, visibility("protected"))) int module_start(size_t args, const void *argp) {
  (void)args;
  (void)argp;
  return 0;
}
__attribute__((weak, visibility("protected"))) int module_stop(size_t args, const void *argp) {
  (void)args;
  (void)argp;
  return 0;
}
__attribute__((constructor)) static void aps5_host_module_start(void) { module_start(0, NULL); }
__attribute__((destructor)) static void aps5_host_module_stop(void) { module_stop(0, NULL); }
