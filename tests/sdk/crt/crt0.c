/* Entry stub of a fixture eboot (aps5 fixture SDK). Built with the fixture; no libc code here.
 *
 * The PS4/PS5 loader enters _start with %rdi pointing at the argument block
 * { int argc; int pad; char *argv[argc + 1]; char *envp[]... } and %rsi holding an exit hook (may be 0).
 * DT_INIT_ARRAY / DT_FINI_ARRAY are run by the loader, not here. */
#include <stdlib.h>

int main(int argc, char **argv, char **envp);

struct aps5_entry_args {
  int argc;
  int pad;
  char *argv[];
};

__attribute__((visibility("hidden"), noreturn, used)) void __aps5_start(struct aps5_entry_args *args, void (*exit_hook)(void)) {
  static char *empty[2];
  int argc = args ? args->argc : 0;
  char **argv = args ? args->argv : empty;
  if (exit_hook)
    atexit(exit_hook);
  exit(main(argc, argv, argv + argc + 1));
}

/* The ABI enters with a 16-byte aligned stack and no return address: realign, then call C. */
__asm__(".section .text.start,\"ax\",@progbits\n"
        ".globl _start\n"
        ".type _start,@function\n"
        "_start:\n"
        "  xorl %ebp, %ebp\n"
        "  andq $-16, %rsp\n"
        "  callq __aps5_start\n"
        "  hlt\n"
        ".size _start, .-_start\n");

__attribute__((section(".interp"), used)) static const char interp[] = "/libexec/ld-elf.so.1";

static const char process_name[] = "aps5-fixture";
static const char main_thread_name[] = "main";

/* A relocated pointer in .data.rel.ro, so that every eboot has a relro segment
 * (PT_SCE_RELRO / PT_GNU_RELRO) like the files made by Sony's and OpenOrbis's tools. */
__attribute__((used, section(".data.rel.ro"))) static const char *const aps5_relro_anchor = process_name;

/* Process param (PT_SCE_PROCPARAM). Pointers are filled by R_X86_64_RELATIVE relocations. */
#ifdef APS5_PS4
struct aps5_process_param {
  unsigned long size;
  unsigned int magic;         /* "ORBI" */
  unsigned int entry_count;
  unsigned long sdk_version;  /* as in the OpenOrbis-built samples */
  const void *ptr[7];         /* process name, main thread name, priority, stack size, libc, mem, fs params */
};
__attribute__((section(".sce_process_param"), used, aligned(8))) struct aps5_process_param sceProcessParam = {
    sizeof(struct aps5_process_param), 0x4942524F, 3, 0x04508101, {process_name, main_thread_name}};
_Static_assert(sizeof(struct aps5_process_param) == 0x50, "PS4 process param is 0x50 bytes");
#else
struct aps5_process_param {
  unsigned long size;
  unsigned int magic;             /* "ORBI" */
  unsigned int entry_count;
  unsigned int ps4_sdk_version;   /* PS4-compatible SDK version */
  unsigned int sdk_version;       /* PS5 SDK version */
  const void *ptr[9];             /* process name, main thread name, priority, stack size, libc, mem, fs, preload, ... */
};
__attribute__((section(".sce_process_param"), used, aligned(8))) struct aps5_process_param sceProcessParam = {
    sizeof(struct aps5_process_param), 0x4942524F, 4, 0x09008031, 0x02000000, {process_name, main_thread_name}};
_Static_assert(sizeof(struct aps5_process_param) == 0x60, "PS5 process param is 0x60 bytes");
#endif
