/* long double arithmetic (x86 fp80), conversions, long double libm. */
#include <float.h>
#include <math.h>
#include <stdio.h>

static long double harmonic(int n) {
    long double s = 0;
    for (int i = n; i >= 1; i--) s += 1.0L / i;
    return s;
}

static long double factorial(int n) { return n <= 1 ? 1.0L : n * factorial(n - 1); }

int main(void) {
    long double h = harmonic(10000);
    printf("H(10000)=%.15Lf\n", h);
    printf("20!=%.0Lf 25!=%.6Le\n", factorial(20), factorial(25));
    long double x = 2.0L;
    printf("sqrtl=%.18Lf expl=%.15Lf logl=%.18Lf sinl=%.15Lf\n", sqrtl(x), expl(x), logl(x), sinl(x));
    double d = (double)(1.0L / 3.0L);
    long double back = d;
    printf("diff=%.6Le\n", (1.0L / 3.0L) - back);
    printf("ldbl_dig=%d mant=%d sizeof=%zu\n", LDBL_DIG, LDBL_MANT_DIG, sizeof(long double));
    long long big = 9007199254740993LL;
    long double bl = (long double)big;
    printf("exact=%lld via double=%lld\n", (long long)bl, (long long)(double)big);
    long double arr[5] = {1.5L, -2.25L, 3.125L, 1e30L, -1e-30L};
    long double mx = arr[0];
    for (int i = 1; i < 5; i++) mx = fmaxl(mx, arr[i]);
    printf("max=%.3Le fabsl=%.4Lf floorl=%.1Lf\n", mx, fabsl(arr[1]), floorl(arr[2]));
    return 0;
}
