/* Host (Linux) stand-in for the SDK's <sce/kernel.h>: same names, implemented in shim.c. */
#ifndef APS5_HOST_SCE_KERNEL_H
#define APS5_HOST_SCE_KERNEL_H
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
typedef unsigned int SceKernelUseconds;
typedef int SceKernelModule;
typedef pthread_t ScePthread;
typedef pthread_attr_t ScePthreadAttr;
typedef pthread_mutex_t ScePthreadMutex;
typedef pthread_mutexattr_t ScePthreadMutexattr;
typedef pthread_cond_t ScePthreadCond;
typedef pthread_condattr_t ScePthreadCondattr;
#define SCE_OK 0
#define SCE_KERNEL_ERROR_EINVAL ((int)0x80020016)
#define SCE_KERNEL_ERROR_ENOENT ((int)0x80020002)
#define SCE_KERNEL_ERROR_ESRCH ((int)0x80020003)
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
/* The fixtures build with -mstack-protector-guard=global, as on the console. */
extern uintptr_t __stack_chk_guard;
__attribute__((noreturn)) void __stack_chk_fail(void);
#endif
