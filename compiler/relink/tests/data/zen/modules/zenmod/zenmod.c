/* zenmod: RDPRU in a bundled module (see ../../main.c). Returns CF, PF, AF, ZF, SF and OF as
   the instruction leaves them, and stores EDX:EAX. */
#include <stddef.h>

int module_start(size_t args, const void *argp) {
  (void)args;
  (void)argp;
  return 0;
}

unsigned zen_rdpru(unsigned reg, unsigned long long *value) {
#ifdef REFERENCE
  /* The manual's definition, with a counter standing for MPERF/APERF. */
  static unsigned long long fake = 1000;
  *value = reg < 2 ? fake++ : 0;
  return reg < 2 ? 1 : 0;
#else
  unsigned lo, hi;
  unsigned long long fl;
  /* CF, PF, AF, ZF, SF and OF all set before, so what RDPRU clears is seen. */
  __asm__ volatile("mov $0x8d5, %%eax\n\tpush %%rax\n\tpopfq\n\t.byte 0x0f, 0x01, 0xfd\n\t"
                   "pushfq\n\tpop %2"
                   : "=a"(lo), "=d"(hi), "=r"(fl)
                   : "c"(reg)
                   : "cc");
  *value = ((unsigned long long)hi << 32) | lo;
  return (unsigned)(fl & 0x8d5);
#endif
}
