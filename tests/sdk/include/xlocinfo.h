/* Dinkumware <xlocinfo.h> (the console libc's C++-library half): the classification and
 * case tables its inline ctype macros index (entry -1 is EOF's). */
#ifndef _XLOCINFO_H
#define _XLOCINFO_H
#include <_aps5_cdefs.h>
__BEGIN_DECLS
const short *_Getpctype(void);
const short *_Getptolower(void);
const short *_Getptoupper(void);
extern const short *_Ctype, *_Tolotab, *_Touptab;
__END_DECLS
#endif
