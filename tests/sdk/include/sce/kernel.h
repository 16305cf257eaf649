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
/* Stack protector support lives in libkernel. */
extern uintptr_t __stack_chk_guard;
__aps5_noreturn void __stack_chk_fail(void);
__END_DECLS
#endif
