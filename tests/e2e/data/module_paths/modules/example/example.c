/* example: installed at /app0/libExample.prx by the test. */
#include <stdio.h>

int module_start(size_t args, const void *argp) {
  (void)args;
  (void)argp;
  printf("example module_start\n");
  return 0;
}

int example_add(int a, int b) { return a + b; }
