/* Start files of a fixture built as a PS5 payload (aps5 fixture SDK, payload layout).
 *
 * Written from the facts of the ps5-payload-sdk's crt: the console's ELF loader calls
 * `int _start(payload_args_t *args)`; the start files clear .bss, find the raw system call
 * instruction through `args->sys_dynlib_dlsym` (libkernel's wrapper of system call 591: its
 * `syscall` sits at +0xa, after `mov rax, nr; mov r10, rcx`; when that wrapper is also
 * `sceKernelDlsym`, the one of `getpid` is used instead), run the constructors of
 * __init_array_start..__init_array_end, store main's result in *args->payloadout, and end
 * through libc's `exit` found with sys_dynlib_dlsym(0x2, "exit").
 * Imports are bound by plain name from the DT_NEEDED libraries before _start runs. argc/argv
 * come from libkernel's getargc/getargv when it has them (else 0 and NULL, as in the SDK). */

typedef struct payload_args {
  int (*sys_dynlib_dlsym)(int, const char *, void *);
  int *rwpipe;
  int *rwpair;
  long kpipe_addr;
  long kdata_base_addr;
  int *payloadout;
} payload_args_t;

int main(int argc, char **argv, char **envp);

extern unsigned char __bss_start[] __attribute__((weak));
extern unsigned char __bss_end[] __attribute__((weak));
extern void (*__init_array_start[])(int, char **, char **) __attribute__((weak));
extern void (*__init_array_end[])(int, char **, char **) __attribute__((weak));
extern void (*__fini_array_start[])(void) __attribute__((weak));
extern void (*__fini_array_end[])(void) __attribute__((weak));

/* Both are set after .bss is cleared. */
static payload_args_t *g_args;
static long g_syscall_at __attribute__((used));

/* long aps5_payload_syscall(long nr, a1..a6): the SDK's __syscall shape, through the pointer. */
long aps5_payload_syscall(long nr, ...);
__asm__(".text\n"
        ".globl aps5_payload_syscall\n"
        ".type aps5_payload_syscall,@function\n"
        "aps5_payload_syscall:\n"
        "  movq %rdi, %rax\n"
        "  movq %rsi, %rdi\n"
        "  movq %rdx, %rsi\n"
        "  movq %rcx, %rdx\n"
        "  movq %r8, %r10\n"
        "  movq %r9, %r8\n"
        "  movq 8(%rsp), %r9\n"
        "  callq *g_syscall_at(%rip)\n"
        "  retq\n"
        ".size aps5_payload_syscall, .-aps5_payload_syscall\n");

payload_args_t *payload_get_args(void) { return g_args; }

static int syscall_init(payload_args_t *args) {
  void *dlsym = 0;
  if (args->sys_dynlib_dlsym(0x1, "sceKernelDlsym", &dlsym))
    args->sys_dynlib_dlsym(0x2001, "sceKernelDlsym", &dlsym);
  if (dlsym == (void *)args->sys_dynlib_dlsym) {
    void *getpid = 0;
    if (args->sys_dynlib_dlsym(0x1, "getpid", &getpid))
      args->sys_dynlib_dlsym(0x2001, "getpid", &getpid);
    g_syscall_at = (long)getpid;
  } else {
    g_syscall_at = (long)args->sys_dynlib_dlsym;
  }
  if (!g_syscall_at)
    return -1;
  g_syscall_at += 0xa;
  return 0;
}

/* Destructors run at exit after the atexit handlers registered later, in C's order (the SDK's
 * start files run them when main returns, before exit). */
static void run_fini_array(void) {
  for (void (**f)(void) = __fini_array_end; f > __fini_array_start;)
    (*--f)();
}

int _start(payload_args_t *args) {
  for (unsigned char *p = __bss_start; p < __bss_end; p++)
    *p = 0;
  g_args = args;
  if ((*args->payloadout = syscall_init(args)))
    return *args->payloadout;

  int (*getargc)(void) = 0;
  char **(*getargv)(void) = 0;
  int argc = 0;
  char **argv = 0;
  if (!args->sys_dynlib_dlsym(0x1, "getargc", &getargc) && !args->sys_dynlib_dlsym(0x1, "getargv", &getargv)) {
    argc = getargc();
    argv = getargv();
  }
  char **envp = argv ? argv + argc + 1 : 0;
  int (*atexit)(void (*)(void)) = 0;
  if (!args->sys_dynlib_dlsym(0x2, "atexit", &atexit) && atexit)
    atexit(run_fini_array);
  for (void (**f)(int, char **, char **) = __init_array_start; f < __init_array_end; f++)
    (*f)(argc, argv, envp);
  *args->payloadout = main(argc, argv, envp);

  void (*exit)(int) = 0;
  if (!args->sys_dynlib_dlsym(0x2, "exit", &exit) && exit)
    exit(*args->payloadout);
  run_fini_array();
  return *args->payloadout;
}
