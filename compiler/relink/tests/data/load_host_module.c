/* Loads modules the host PRX set replaces (a bundled /app0/sce_module/libc.prx, a system
 * module path) and one that does not exist, and calls a function found with sceKernelDlsym. */
#include <sce/kernel.h>
#include <stdio.h>

int main(void) {
  int res = -1;
  SceKernelModule h = sceKernelLoadStartModule("/app0/sce_module/libc.prx", 0, NULL, 0, NULL, &res);
  printf("libc handle valid=%s res=%d\n", h > 0 ? "yes" : "no", res);
  int (*snp)(char *, size_t, const char *, ...) = NULL;
  int r = sceKernelDlsym(h, "snprintf", (void **)&snp);
  char buf[32] = "";
  if (r == 0 && snp)
    snp(buf, sizeof buf, "%s-%03d", "dlsym", 7);
  printf("dlsym snprintf=%d out=[%s]\n", r, buf);
  SceKernelModule k = sceKernelLoadStartModule("libkernel.sprx", 0, NULL, 0, NULL, NULL);
  printf("libkernel.sprx handle valid=%s\n", k > 0 ? "yes" : "no");
  SceKernelModule missing = sceKernelLoadStartModule("/app0/sce_module/libSceNope.prx", 0, NULL, 0, NULL, NULL);
  printf("missing module: %s\n", missing == SCE_KERNEL_ERROR_ENOENT ? "ENOENT" : "other");
  return 0;
}
