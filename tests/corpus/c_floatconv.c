/* Float/int conversions, rounding modes of casts, NaN/Inf, float vs double, denormals. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

static uint64_t bits(double d) { uint64_t u; memcpy(&u, &d, sizeof u); return u; }

int main(void) {
    double vals[] = {0.0, -0.0, 1.5, -1.5, 2.5, -2.7, 1e10, 123456.789, DBL_MIN, 3.0e38};
    for (int i = 0; i < 10; i++) {
        double v = vals[i];
        long long ll = (v > -9e18 && v < 9e18) ? (long long)v : 0;
        printf("%g -> %lld (float %g) bits %016llx\n", v, ll, (double)(float)v, (unsigned long long)bits(v));
    }
    unsigned u = 4000000000u;
    float fu = (float)u;
    double du = u;
    printf("u->f %.1f u->d %.1f f->u %u\n", (double)fu, du, (unsigned)fu);
    uint64_t big = 18446744073709551615ULL;
    printf("u64->d %.1f d->u64 %llu\n", (double)big, (unsigned long long)(double)(big >> 1));
    double nan = NAN, inf = INFINITY;
    printf("nan==nan %d nan<1 %d inf>max %d -inf %g\n", nan == nan, nan < 1, inf > DBL_MAX, -inf);
    double tiny = DBL_MIN / 1024;
    printf("denormal %d %g\n", fpclassify(tiny) == FP_SUBNORMAL, tiny);
    float f = 0.1f;
    double d = 0.1;
    printf("0.1f=%.20f 0.1=%.20f eq=%d\n", (double)f, d, (double)f == d);
    float acc = 0;
    for (int i = 0; i < 1000; i++) acc += 0.001f;
    printf("float sum=%.7f\n", (double)acc);
    short s = (short)-1.9;
    unsigned char uc = (unsigned char)200.9;
    printf("short=%d uchar=%u\n", s, uc);
    return 0;
}
