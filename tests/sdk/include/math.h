#ifndef _MATH_H
#define _MATH_H
#include <_aps5_cdefs.h>
typedef float float_t;
typedef double double_t;
#define HUGE_VAL __builtin_huge_val()
#define HUGE_VALF __builtin_huge_valf()
#define INFINITY __builtin_inff()
#define NAN __builtin_nanf("")
#define M_PI 3.14159265358979323846
#define M_E 2.7182818284590452354
#define M_SQRT2 1.41421356237309504880
#define isnan(x) __builtin_isnan(x)
#define isinf(x) __builtin_isinf(x)
#define isfinite(x) __builtin_isfinite(x)
#define signbit(x) __builtin_signbit(x)
#define fpclassify(x) __builtin_fpclassify(FP_NAN, FP_INFINITE, FP_NORMAL, FP_SUBNORMAL, FP_ZERO, x)
#define FP_NAN 0
#define FP_INFINITE 1
#define FP_NORMAL 2
#define FP_SUBNORMAL 3
#define FP_ZERO 4
/* The console's (Dinkumware) math functions report errors in errno and in the FP flags. */
#define MATH_ERRNO 1
#define MATH_ERREXCEPT 2
#define math_errhandling (MATH_ERRNO | MATH_ERREXCEPT)
__BEGIN_DECLS
double sin(double); double cos(double); double tan(double);
double asin(double); double acos(double); double atan(double); double atan2(double, double);
double sinh(double); double cosh(double); double tanh(double);
double exp(double); double exp2(double); double log(double); double log10(double); double log2(double);
double pow(double, double); double sqrt(double); double cbrt(double); double hypot(double, double);
double fabs(double); double floor(double); double ceil(double); double round(double); double trunc(double);
double fmod(double, double); double ldexp(double, int); double frexp(double, int *); double modf(double, double *);
double fmin(double, double); double fmax(double, double); long lround(double);
float sinf(float); float cosf(float); float tanf(float); float atan2f(float, float);
float expf(float); float logf(float); float powf(float, float); float sqrtf(float);
float fabsf(float); float floorf(float); float ceilf(float); float roundf(float); float fmodf(float, float);
float asinf(float); float acosf(float); float atanf(float); float exp2f(float); float log10f(float);
float log2f(float); float cbrtf(float); float truncf(float); float hypotf(float, float);
float fmaxf(float, float); float fminf(float, float); float ldexpf(float, int); float frexpf(float, int *);
float modff(float, float *); double rint(double); double copysign(double, double);
long long llround(double); long lroundf(float);
__END_DECLS
#endif
