/* No include guard: assert follows NDEBUG at each inclusion (C11 7.2). */
#include <_aps5_cdefs.h>
#undef assert
#ifdef NDEBUG
#define assert(e) ((void)0)
#else
__BEGIN_DECLS
/* Dinkumware: prints "MSG -- file FILE, line LINE" and aborts. */
__aps5_noreturn void _Assert(const char *, const char *);
__END_DECLS
#define __aps5_str2(x) #x
#define __aps5_str(x) __aps5_str2(x)
#define assert(e) ((e) ? (void)0 : _Assert(#e, __FILE__ ", line " __aps5_str(__LINE__)))
#endif
#ifndef __cplusplus
#define static_assert _Static_assert
#endif
