/* sse4a: every SSE4a form through clang's builtins (compiled with -msse4a), on values the
   compiler cannot fold (read through volatile). The relinker must find each one in the
   reachable code; on a CPU without SSE4a (every Intel CPU) the port dies with SIGILL at the
   first one, after the first line. Operands are ones the AMD manual defines: length + index
   <= 64, length 0 meaning 64. */
#include <stdio.h>

typedef long long v2di __attribute__((vector_size(16)));
typedef char v16qi __attribute__((vector_size(16)));
typedef float v4sf __attribute__((vector_size(16)));
typedef double v2df __attribute__((vector_size(16)));

static volatile unsigned long long in_lo = 0x0123456789abcdefULL, in_hi = 0xfedcba9876543210ULL;
static volatile unsigned long long src_lo = 0xa5a5a5a55a5a5a5aULL;
/* Register forms: bits 5:0 length, bits 13:8 index (EXTRQ); INSERTQ takes them from the
   source's upper quadword bits 69:64 and 77:72. */
static volatile unsigned long long ctl = (12ULL << 8) | 20; /* index 12, length 20 */
static volatile float fin = 1.5f;
static volatile double din = -2.25;
/* Non-temporal stores go to memory the compiler must keep. */
float stream_f;
double stream_d;

int main(void) {
  printf("sse4a: start\n");
  fflush(stdout);
  v2di x = {(long long)in_lo, (long long)in_hi};
  v2di s = {(long long)src_lo, (long long)ctl};
  v16qi c = (v16qi)(v2di){(long long)ctl, 0};
  v2di a = __builtin_ia32_extrqi(x, 16, 8);
  v2di b = __builtin_ia32_extrq(x, c);
  v2di d = __builtin_ia32_insertqi(x, s, 8, 40);
  v2di e = __builtin_ia32_insertq(x, s);
  __builtin_ia32_movntss(&stream_f, (v4sf){fin, 0, 0, 0});
  __builtin_ia32_movntsd(&stream_d, (v2df){din, 0});
  __asm__ volatile("sfence" ::: "memory");
  printf("extrqi %016llx\nextrq %016llx\ninsertqi %016llx\ninsertq %016llx\nmovntss %g\nmovntsd %g\n",
         (unsigned long long)a[0], (unsigned long long)b[0], (unsigned long long)d[0],
         (unsigned long long)e[0], (double)stream_f, stream_d);
  return 0;
}
