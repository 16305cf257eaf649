#ifndef _SYS_TYPES_H
#define _SYS_TYPES_H
#include <_aps5_cdefs.h>
typedef __aps5_size_t size_t;
typedef __aps5_ssize_t ssize_t;
typedef __aps5_off_t off_t;
typedef __aps5_time_t time_t;
typedef __aps5_pid_t pid_t;
typedef unsigned short mode_t;
typedef unsigned int useconds_t;
#endif
