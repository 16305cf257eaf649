/* payload_args: what a PS5 payload gets from the console's ELF loader, checked by the program
 * itself. The payload layout's start files (tests/sdk/crt/crt_payload.c) keep the
 * `payload_args_t *` of _start and the raw system call pointer (sys_dynlib_dlsym + 0xa), as the
 * ps5-payload-sdk's do. Prints one line written by a raw `write`, then the failure count. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

typedef struct payload_args {
  int (*sys_dynlib_dlsym)(int, const char *, void *);
  int *rwpipe;
  int *rwpair;
  long kpipe_addr;
  long kdata_base_addr;
  int *payloadout;
} payload_args_t;

payload_args_t *payload_get_args(void);
long aps5_payload_syscall(long nr, ...);

static int fails;
#define CHECK(c, ...)                     \
  do {                                    \
    if (!(c)) {                           \
      printf("FAIL line %d: ", __LINE__); \
      printf(__VA_ARGS__);                \
      printf("\n");                       \
      fails++;                            \
    }                                     \
  } while (0)

int main(void) {
  payload_args_t *a = payload_get_args();
  CHECK(a && a->sys_dynlib_dlsym && a->payloadout, "the loader's arguments");
  if (!a)
    return 1;
  /* No kernel to read or write through. */
  CHECK(a->rwpipe[0] == -1 && a->rwpipe[1] == -1 && a->rwpair[0] == -1 && a->rwpair[1] == -1,
        "kernel pipes %d %d", a->rwpipe[0], a->rwpipe[1]);
  CHECK(a->kpipe_addr == 0 && a->kdata_base_addr == 0, "kernel addresses");

  /* FreeBSD system calls through the pointer: getpid (20), write (4), close (6). */
  CHECK(aps5_payload_syscall(20) == getpid(), "raw getpid");
  static const char msg[] = "written by a raw system call\n";
  fflush(stdout);
  CHECK(aps5_payload_syscall(4, 1, msg, sizeof msg - 1) == (long)(sizeof msg - 1), "raw write");
  errno = 0;
  long r = aps5_payload_syscall(6, -1);
  CHECK(r == -1 && errno == EBADF, "raw close(-1): %ld, errno %d", r, errno);

  /* dynlib_dlsym (591) through the wrapper: the C library (handle 2) and libkernel (1). */
  size_t (*len)(const char *) = 0;
  CHECK(a->sys_dynlib_dlsym(0x2, "strlen", &len) == 0 && len == strlen, "dlsym strlen");
  CHECK(len && len("four") == 4, "strlen through dlsym");
  int (*pid)(void) = 0;
  CHECK(a->sys_dynlib_dlsym(0x1, "getpid", &pid) == 0 && pid && pid() == getpid(), "dlsym getpid");
  void *none = 0;
  errno = 0;
  CHECK(a->sys_dynlib_dlsym(0x2, "aps5_no_such_function", &none) == -1 && errno == ESRCH && !none,
        "dlsym of a missing name: errno %d", errno);

  /* A data object import (__stderrp), used through stderr. */
  CHECK(stderr && fputs("", stderr) >= 0, "stderr");
  printf("failures: %d\n", fails);
  return fails;
}
