/* Shared definitions of the aps5 fixture SDK headers (FreeBSD / Dinkumware flavoured, x86-64 LP64). */
#ifndef _APS5_CDEFS_H
#define _APS5_CDEFS_H
#ifdef __cplusplus
#define __BEGIN_DECLS extern "C" {
#define __END_DECLS }
#else
#define __BEGIN_DECLS
#define __END_DECLS
#endif
#define __aps5_noreturn __attribute__((__noreturn__))
#define __aps5_printf(f, a) __attribute__((__format__(__printf__, f, a)))
typedef __SIZE_TYPE__ __aps5_size_t;
typedef long __aps5_ssize_t;
typedef long __aps5_off_t;
typedef long __aps5_time_t;
typedef int __aps5_pid_t;
#endif
