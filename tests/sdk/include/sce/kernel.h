#ifndef _SCE_KERNEL_H
#define _SCE_KERNEL_H
/* The libkernel calls the fixtures use (public PS4/PS5 SDK signatures). */
#include <_aps5_cdefs.h>
#include <stdint.h>
typedef __aps5_size_t size_t;
typedef unsigned int SceKernelUseconds;
typedef int SceKernelModule;
typedef struct pthread *ScePthread;
typedef struct pthread_attr *ScePthreadAttr;
typedef struct pthread_mutex *ScePthreadMutex;
typedef struct pthread_mutex_attr *ScePthreadMutexattr;
typedef struct pthread_cond *ScePthreadCond;
typedef struct pthread_cond_attr *ScePthreadCondattr;
#define SCE_OK 0
#define SCE_KERNEL_ERROR_EINVAL ((int)0x80020016)
#define SCE_KERNEL_ERROR_ENOENT ((int)0x80020002)
#define SCE_KERNEL_ERROR_ESRCH ((int)0x80020003)
__BEGIN_DECLS
int sceKernelUsleep(SceKernelUseconds);
uint64_t sceKernelGetProcessTime(void);
SceKernelModule sceKernelLoadStartModule(const char *, size_t, const void *, uint32_t, const void *, int *);
int sceKernelStopUnloadModule(SceKernelModule, size_t, const void *, uint32_t, const void *, int *);
int sceKernelDlsym(SceKernelModule, const char *, void **);
int scePthreadCreate(ScePthread *, const ScePthreadAttr *, void *(*)(void *), void *, const char *);
int scePthreadJoin(ScePthread, void **);
ScePthread scePthreadSelf(void);
int scePthreadMutexInit(ScePthreadMutex *, const ScePthreadMutexattr *, const char *);
int scePthreadMutexDestroy(ScePthreadMutex *);
int scePthreadMutexLock(ScePthreadMutex *);
int scePthreadMutexUnlock(ScePthreadMutex *);
int scePthreadCondInit(ScePthreadCond *, const ScePthreadCondattr *, const char *);
int scePthreadCondDestroy(ScePthreadCond *);
int scePthreadCondWait(ScePthreadCond *, ScePthreadMutex *);
int scePthreadCondSignal(ScePthreadCond *);
int scePthreadCondBroadcast(ScePthreadCond *);
/* Event queues (SceKernelEqueue is a handle; SceKernelEvent is FreeBSD's 32-byte kevent). */
typedef struct _SceKernelEqueue *SceKernelEqueue;
typedef struct {
  uintptr_t ident;
  int16_t filter;
  uint16_t flags;
  uint32_t fflags;
  int64_t data;
  void *udata;
} SceKernelEvent;
int sceKernelCreateEqueue(SceKernelEqueue *, const char *);
int sceKernelDeleteEqueue(SceKernelEqueue);
int sceKernelWaitEqueue(SceKernelEqueue, SceKernelEvent *, int, int *, SceKernelUseconds *);
int sceKernelGetEventFilter(const SceKernelEvent *);
uintptr_t sceKernelGetEventId(const SceKernelEvent *);
intptr_t sceKernelGetEventData(const SceKernelEvent *);
void *sceKernelGetEventUserData(const SceKernelEvent *);
/* Direct memory (the GPU-visible memory; prot: CPU read 1, write 2, GPU read 0x10, write 0x20). */
int sceKernelAllocateDirectMemory(long, long, size_t, size_t, int, long *);
int sceKernelMapDirectMemory(void **, size_t, int, int, long, size_t);
int sceKernelReleaseDirectMemory(long, size_t);
/* Stack protector support lives in libkernel. */
extern uintptr_t __stack_chk_guard;
__aps5_noreturn void __stack_chk_fail(void);
__END_DECLS
#endif
