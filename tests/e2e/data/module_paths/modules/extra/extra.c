#include <stddef.h>

/* extra: installed at /app0/plugins/audio/extra.bin by the test; imports example_add. */
int example_add(int a, int b);

int module_start(size_t args, const void *argp) {
  (void)args;
  (void)argp;
  return 7;
}

int extra_twice(int x) { return example_add(x, x); }
