/* zen: Zen's CLZERO, RDPRU, MONITORX and MWAITX (clang-14 builtins with -mclzero -mmwaitx;
   RDPRU, which LLVM 14 has neither a builtin nor a mnemonic for, by its encoding 0F 01 FD),
   each on values the compiler cannot fold. What it prints is what the AMD manual defines
   (APM vol. 3), checked by the program: CLZERO zeroes exactly the 64-byte line holding its address; RDPRU with ECX 0 (MPERF) or 1
   (APERF) sets CF and returns a counter that does not go back, with any other ECX it returns
   0 with CF clear, and it clears OF, SF, ZF, AF and PF; MWAITX with its timer returns.
   Built with -DREFERENCE, the same checks run on the manual's definitions written in C, so
   the two builds must print the same lines. */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static unsigned char buf[256] __attribute__((aligned(64)));
static volatile int off = 77; /* inside the second line, bytes 64..127 */
static volatile unsigned sel_mperf = 0, sel_aperf = 1, sel_bad = 7;

/* RDPRU lives in a bundled module (sce_module/zenmod.prx): AMD-only instructions in every
   converted module are lowered too. */
unsigned zen_rdpru(unsigned reg, unsigned long long *value);

struct pru {
  unsigned long long value;
  unsigned flags; /* CF, PF, AF, ZF, SF, OF after the instruction */
};

static struct pru rdpru(unsigned reg) {
  struct pru r;
  r.flags = zen_rdpru(reg, &r.value);
  return r;
}

int main(void) {
  printf("zen: start\n");
  fflush(stdout);
  memset(buf, 0xab, sizeof buf);
#ifdef REFERENCE
  memset((void *)((uintptr_t)(buf + off) & ~(uintptr_t)63), 0, 64);
#else
  __builtin_ia32_clzero(buf + off);
#endif
  int first = -1, last = -1, zeros = 0;
  for (int i = 0; i < (int)sizeof buf; i++)
    if (buf[i] == 0) {
      if (first < 0)
        first = i;
      last = i;
      zeros++;
    }
  printf("clzero: %d bytes zeroed, %d..%d\n", zeros, first, last);
  fflush(stdout);

  struct pru m0 = rdpru(sel_mperf), m1 = rdpru(sel_mperf);
  struct pru a0 = rdpru(sel_aperf), a1 = rdpru(sel_aperf);
  struct pru bad = rdpru(sel_bad);
  printf("rdpru mperf: flags %#x, counts up %d\n", m0.flags, m1.value >= m0.value && m0.value != 0);
  printf("rdpru aperf: flags %#x, counts up %d\n", a0.flags, a1.value >= a0.value && a0.value != 0);
  printf("rdpru 7: flags %#x, value %llu\n", bad.flags, bad.value);
  fflush(stdout);

#ifndef REFERENCE
  __builtin_ia32_monitorx(buf, 0, 0);
  /* Extension bit 1: the timer; wake after 1000 TSC ticks at the latest. */
  __builtin_ia32_mwaitx(2, 0, 1000);
#endif
  printf("mwaitx: returned\n");
  return 0;
}
