#ifndef _TIME_H
#define _TIME_H
#include <_aps5_cdefs.h>
typedef __aps5_size_t size_t;
typedef __aps5_time_t time_t;
typedef unsigned long clock_t;
typedef int clockid_t;
#define NULL ((void *)0)
#define CLOCKS_PER_SEC 1000000
/* FreeBSD clock ids. */
#define CLOCK_REALTIME 0
#define CLOCK_MONOTONIC 4
#define TIME_UTC 1
struct timespec { time_t tv_sec; long tv_nsec; };
struct tm {
  int tm_sec, tm_min, tm_hour, tm_mday, tm_mon, tm_year, tm_wday, tm_yday, tm_isdst;
  long tm_gmtoff;
  char *tm_zone;
};
__BEGIN_DECLS
time_t time(time_t *);
clock_t clock(void);
double difftime(time_t, time_t);
time_t mktime(struct tm *);
struct tm *gmtime(const time_t *);
struct tm *localtime(const time_t *);
char *asctime(const struct tm *);
char *ctime(const time_t *);
size_t strftime(char *__restrict, size_t, const char *__restrict, const struct tm *__restrict);
/* POSIX clocks are libkernel (libScePosix) functions. */
int clock_gettime(clockid_t, struct timespec *);
int nanosleep(const struct timespec *, struct timespec *);
__END_DECLS
#endif
