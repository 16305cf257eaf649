/* module_paths: modules loaded by path from outside sce_module/ (the e2e test moves them there:
 * example -> /app0/libExample.prx, extra -> /app0/plugins/audio/extra.bin, a module by content
 * only). extra imports from example, so the loader must find libExample.prx next to the
 * executable's app0/, not in sce_module/. /app0/data/notes.prx is text: a file, not a module. */
#include <sce/kernel.h>
#include <stdio.h>

static SceKernelModule load(const char *path) {
  int result = -1;
  SceKernelModule h = sceKernelLoadStartModule(path, 0, NULL, 0, NULL, &result);
  printf("load %s: %s, module_start=%d\n", path, h > 0 ? "ok" : "failed", result);
  return h;
}

int main(void) {
  SceKernelModule a = load("/app0/libExample.prx");
  SceKernelModule b = load("/app0/plugins/audio/extra.bin");
  if (a <= 0 || b <= 0)
    return 1;
  int (*add)(int, int) = NULL;
  int (*twice)(int) = NULL;
  if (sceKernelDlsym(a, "example_add", (void **)&add) != 0 ||
      sceKernelDlsym(b, "extra_twice", (void **)&twice) != 0)
    return 2;
  printf("example_add(2, 3)=%d\n", add(2, 3));
  printf("extra_twice(21)=%d\n", twice(21));
  char line[64] = {0};
  FILE *f = fopen("/app0/data/notes.prx", "r");
  if (!f || !fgets(line, sizeof line, f))
    return 3;
  fclose(f);
  printf("notes.prx: %s", line);
  printf("unload=%d,%d\n", sceKernelStopUnloadModule(b, 0, NULL, 0, NULL, NULL),
         sceKernelStopUnloadModule(a, 0, NULL, 0, NULL, NULL));
  return 0;
}
