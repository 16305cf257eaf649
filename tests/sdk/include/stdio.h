#ifndef _STDIO_H
#define _STDIO_H
#include <_aps5_cdefs.h>
#include <stdarg.h>
typedef __aps5_size_t size_t;
typedef __aps5_off_t fpos_t;
/* Opaque: libc.sprx owns the layout (Dinkumware head + FreeBSD tail, ~456 bytes). */
typedef struct _Filet FILE;
#define NULL ((void *)0)
#define EOF (-1)
#define BUFSIZ 1024
#define FILENAME_MAX 1024
#define FOPEN_MAX 20
#define L_tmpnam 1024
#define _IOFBF 0
#define _IOLBF 1
#define _IONBF 2
#define SEEK_SET 0
#define SEEK_CUR 1
#define SEEK_END 2
__BEGIN_DECLS
/* Dinkumware standard streams, exported by libc as FILE objects, and FreeBSD's stream
 * pointers (libSceLibcInternal data objects), which the ps5-payload-sdk's headers use. */
extern FILE _Stdin, _Stdout, _Stderr;
extern FILE *__stdinp, *__stdoutp, *__stderrp;
#ifdef APS5_PAYLOAD
#define stdin __stdinp
#define stdout __stdoutp
#define stderr __stderrp
#else
#define stdin (&_Stdin)
#define stdout (&_Stdout)
#define stderr (&_Stderr)
#endif
int printf(const char *__restrict, ...) __aps5_printf(1, 2);
int fprintf(FILE *__restrict, const char *__restrict, ...) __aps5_printf(2, 3);
int sprintf(char *__restrict, const char *__restrict, ...) __aps5_printf(2, 3);
int snprintf(char *__restrict, size_t, const char *__restrict, ...) __aps5_printf(3, 4);
int vprintf(const char *__restrict, va_list);
int vfprintf(FILE *__restrict, const char *__restrict, va_list);
int vsprintf(char *__restrict, const char *__restrict, va_list);
int vsnprintf(char *__restrict, size_t, const char *__restrict, va_list);
int scanf(const char *__restrict, ...);
int fscanf(FILE *__restrict, const char *__restrict, ...);
int sscanf(const char *__restrict, const char *__restrict, ...);
int puts(const char *);
int fputs(const char *__restrict, FILE *__restrict);
int fputc(int, FILE *);
int putc(int, FILE *);
int putchar(int);
int fgetc(FILE *);
int getc(FILE *);
int getchar(void);
char *fgets(char *__restrict, int, FILE *__restrict);
int ungetc(int, FILE *);
FILE *fopen(const char *__restrict, const char *__restrict);
FILE *freopen(const char *__restrict, const char *__restrict, FILE *__restrict);
int fclose(FILE *);
int fflush(FILE *);
size_t fread(void *__restrict, size_t, size_t, FILE *__restrict);
size_t fwrite(const void *__restrict, size_t, size_t, FILE *__restrict);
int fseek(FILE *, long, int);
long ftell(FILE *);
void rewind(FILE *);
int fgetpos(FILE *__restrict, fpos_t *__restrict);
int fsetpos(FILE *, const fpos_t *);
int feof(FILE *);
int ferror(FILE *);
void clearerr(FILE *);
void perror(const char *);
int setvbuf(FILE *__restrict, char *__restrict, int, size_t);
void setbuf(FILE *__restrict, char *__restrict);
int remove(const char *);
int rename(const char *, const char *);
__END_DECLS
#endif
