/* Force-included (-include) into fixture sources when the oracle test builds them natively for
 * Linux. Maps the few console-specific things onto POSIX: /app0 paths become paths relative to
 * the run folder (the native dump), which is the current directory. */
#ifndef APS5_HOST_H
#define APS5_HOST_H
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>

static inline const char *aps5_host_path(const char *p) {
  return (p[0] == '/' && p[1] == 'a' && p[2] == 'p' && p[3] == 'p' && p[4] == '0' && p[5] == '/') ? p + 6 : p;
}
static inline FILE *aps5_host_fopen(const char *p, const char *m) { return fopen(aps5_host_path(p), m); }
#define fopen(p, m) aps5_host_fopen(p, m)
#define open(p, ...) open(aps5_host_path(p), __VA_ARGS__)
#endif
