/* Linux implementations of the sce* calls the fixtures use, for the native oracle run. */
#define _GNU_SOURCE
#include "sce/kernel.h"
#include "sce/remoteplay.h"
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* glibc keeps its canary in TLS; the console (and -mstack-protector-guard=global) use a global. */
uintptr_t __stack_chk_guard = 0x00a5a5a5deadbeefUL;

static int sce_error(int e) { return e == 0 ? 0 : (int)(0x80020000u | (unsigned)e); }

int sceKernelUsleep(SceKernelUseconds us) { return usleep(us) == 0 ? 0 : sce_error(errno); }

uint64_t sceKernelGetProcessTime(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000u + (uint64_t)t.tv_nsec / 1000u;
}

#define MAX_MODULES 16
static void *modules[MAX_MODULES + 1];

SceKernelModule sceKernelLoadStartModule(const char *path, size_t args, const void *argp, uint32_t flags,
                                         const void *opt, int *res) {
  (void)flags;
  (void)opt;
  const char *p = strncmp(path, "/app0/", 6) == 0 ? path + 6 : path;
  char local[4096];
  snprintf(local, sizeof local, "./%s", p);
  void *h = dlopen(local, RTLD_NOW | RTLD_LOCAL);
  if (!h)
    return SCE_KERNEL_ERROR_ENOENT;
  for (int i = 1; i <= MAX_MODULES; i++) {
    if (!modules[i]) {
      modules[i] = h;
      int (*start)(size_t, const void *) = (int (*)(size_t, const void *))dlsym(h, "module_start");
      int r = start ? start(args, argp) : 0;
      if (res)
        *res = r;
      return i;
    }
  }
  dlclose(h);
  return SCE_KERNEL_ERROR_EINVAL;
}

int sceKernelDlsym(SceKernelModule m, const char *name, void **out) {
  if (m <= 0 || m > MAX_MODULES || !modules[m])
    return SCE_KERNEL_ERROR_ESRCH;
  void *p = dlsym(modules[m], name);
  if (!p)
    return SCE_KERNEL_ERROR_ESRCH;
  *out = p;
  return 0;
}

int sceKernelStopUnloadModule(SceKernelModule m, size_t args, const void *argp, uint32_t flags, const void *opt,
                              int *res) {
  (void)flags;
  (void)opt;
  if (m <= 0 || m > MAX_MODULES || !modules[m])
    return SCE_KERNEL_ERROR_ESRCH;
  int (*stop)(size_t, const void *) = (int (*)(size_t, const void *))dlsym(modules[m], "module_stop");
  int r = stop ? stop(args, argp) : 0;
  if (res)
    *res = r;
  dlclose(modules[m]);
  modules[m] = NULL;
  return 0;
}

int scePthreadCreate(ScePthread *t, const ScePthreadAttr *a, void *(*f)(void *), void *arg, const char *name) {
  (void)name;
  return sce_error(pthread_create(t, a, f, arg));
}
int scePthreadJoin(ScePthread t, void **ret) { return sce_error(pthread_join(t, ret)); }
ScePthread scePthreadSelf(void) { return pthread_self(); }
int scePthreadMutexInit(ScePthreadMutex *m, const ScePthreadMutexattr *a, const char *name) {
  (void)name;
  return sce_error(pthread_mutex_init(m, a));
}
int scePthreadMutexDestroy(ScePthreadMutex *m) { return sce_error(pthread_mutex_destroy(m)); }
int scePthreadMutexLock(ScePthreadMutex *m) { return sce_error(pthread_mutex_lock(m)); }
int scePthreadMutexUnlock(ScePthreadMutex *m) { return sce_error(pthread_mutex_unlock(m)); }
int scePthreadCondInit(ScePthreadCond *c, const ScePthreadCondattr *a, const char *name) {
  (void)name;
  return sce_error(pthread_cond_init(c, a));
}
int scePthreadCondDestroy(ScePthreadCond *c) { return sce_error(pthread_cond_destroy(c)); }
int scePthreadCondWait(ScePthreadCond *c, ScePthreadMutex *m) { return sce_error(pthread_cond_wait(c, m)); }
int scePthreadCondSignal(ScePthreadCond *c) { return sce_error(pthread_cond_signal(c)); }
int scePthreadCondBroadcast(ScePthreadCond *c) { return sce_error(pthread_cond_broadcast(c)); }

/* What the aps5 runtime does for a NID no library implements. */
int sceRemoteplayInitialize(void *heap, size_t size) {
  (void)heap;
  (void)size;
  fprintf(stderr, "unimplemented: libSceRemoteplay::sceRemoteplayInitialize (k1SwgkMSOM8)\n");
  abort();
}
