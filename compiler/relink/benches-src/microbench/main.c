/* microbench: ns per operation of malloc/free, snprintf and mutex lock+unlock, timed with
 * clock_gettime(CLOCK_MONOTONIC). Built both as a PS5 dump (relinked, running on the PRX
 * libc/libkernel) and natively against the host libc by compiler/relink/examples/bench_runtime.rs.
 * Prints one "name ns_per_op" line per benchmark (best of 5 rounds); the *_threaded mutex
 * figures are taken after the process has had a second thread. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long long now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* Results go here so the compiler cannot drop the loops. */
static volatile unsigned long sink;

static void bench_malloc(int n) {
  void *keep[16];
  for (int i = 0; i < n; i++) {
    /* Sizes 16..496: the small-block path every game hits. */
    size_t size = 16 + (size_t)(i & 15) * 32;
    void *p = malloc(size);
    ((char *)p)[0] = (char)i;
    keep[i & 15] = p;
    if ((i & 15) == 15)
      for (int k = 0; k < 16; k++)
        free(keep[k]);
  }
  sink += n;
}

static void bench_snprintf(int n) {
  char buf[128];
  unsigned long total = 0;
  for (int i = 0; i < n; i++)
    total += (unsigned long)snprintf(buf, sizeof buf, "frame %d: %s x=%08x f=%.3f", i, "player", i * 7u,
                                     (double)i * 0.5);
  sink += total + (unsigned char)buf[3];
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long counter;

static void bench_mutex(int n) {
  for (int i = 0; i < n; i++) {
    pthread_mutex_lock(&lock);
    counter++;
    pthread_mutex_unlock(&lock);
  }
  sink += counter;
}

/* The same with an explicit ERRORCHECK mutex: FreeBSD's (so the console's) default type,
 * while glibc's default is NORMAL; this pair compares like with like. */
static pthread_mutex_t checked;

static void bench_mutex_errorcheck(int n) {
  for (int i = 0; i < n; i++) {
    pthread_mutex_lock(&checked);
    counter++;
    pthread_mutex_unlock(&checked);
  }
  sink += counter;
}

static void *nothing(void *arg) { return arg; }

static void run(const char *name, void (*f)(int), int n) {
  f(n / 10); /* warm up */
  long long best = -1;
  for (int round = 0; round < 5; round++) {
    long long t0 = now_ns();
    f(n);
    long long dt = now_ns() - t0;
    if (best < 0 || dt < best)
      best = dt;
  }
  /* Fixed-point with 3 decimals: the PRX printf and glibc then print the same digits. */
  long long milli = best * 1000 / n;
  printf("%s %lld.%03lld\n", name, milli / 1000, milli % 1000);
}

int main(void) {
  run("malloc_free", bench_malloc, 2000000);
  run("snprintf", bench_snprintf, 300000);
  run("mutex_lock_unlock", bench_mutex, 2000000);
  pthread_mutexattr_t attr;
  pthread_mutexattr_init(&attr);
  pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ERRORCHECK);
  pthread_mutex_init(&checked, &attr);
  pthread_mutexattr_destroy(&attr);
  run("mutex_errorcheck_lock_unlock", bench_mutex_errorcheck, 2000000);
  /* Once a process has created a thread, lock and unlock need locked instructions (both
   * glibc and aps5's libkernel skip them while there is only one thread): the same two
   * loops again, still uncontended, after one thread came and went. */
  pthread_t t;
  pthread_create(&t, NULL, nothing, NULL);
  pthread_join(t, NULL);
  run("mutex_lock_unlock_threaded", bench_mutex, 2000000);
  run("mutex_errorcheck_lock_unlock_threaded", bench_mutex_errorcheck, 2000000);
  return 0;
}
