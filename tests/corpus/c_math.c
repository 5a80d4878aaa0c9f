/* float/double math with <math.h>: transcendental, rounding, classification, fma. */
#include <math.h>
#define PI 3.14159265358979323846
#include <stdio.h>

static double newton_sqrt(double x) {
    double g = x / 2;
    for (int i = 0; i < 30; i++) g = 0.5 * (g + x / g);
    return g;
}

static double simpson(double (*f)(double), double a, double b, int n) {
    double h = (b - a) / n, s = f(a) + f(b);
    for (int i = 1; i < n; i++) s += f(a + i * h) * ((i % 2) ? 4 : 2);
    return s * h / 3;
}

static double gauss(double x) { return exp(-x * x); }

int main(void) {
    double xs[] = {0.0, 0.5, 1.0, 2.0, 3.5};
    for (int i = 0; i < 5; i++) {
        double x = xs[i];
        printf("x=%.2f sin=%.9f cos=%.9f exp=%.9f log1p=%.9f atan2=%.9f\n", x, sin(x), cos(x), exp(x), log1p(x), atan2(x, 1.5));
    }
    printf("pow=%.9f sqrt=%.12f newton=%.12f cbrt=%.9f hypot=%.9f\n", pow(2.0, 0.5), sqrt(2.0), newton_sqrt(2.0), cbrt(27.5), hypot(3, 4));
    printf("floor=%.1f ceil=%.1f round=%.1f trunc=%.1f rint=%.1f fmod=%.3f\n", floor(-2.5), ceil(-2.5), round(-2.5), trunc(-2.7), rint(2.5), fmod(10.5, 3.0));
    printf("fabs=%.2f copysign=%.2f fmin=%.2f fmax=%.2f fma=%.6f\n", fabs(-3.25), copysign(2.0, -0.0), fmin(1.0, 2.0), fmax(1.0, 2.0), fma(1.5, 2.5, 0.25));
    printf("isnan=%d isinf=%d isfinite=%d signbit=%d\n", isnan(NAN) != 0, isinf(-INFINITY) != 0, isfinite(1.0) != 0, signbit(-0.0) != 0);
    printf("integral=%.10f (sqrt(pi)/2*erf(2)=%.10f)\n", simpson(gauss, 0, 2, 1000), sqrt(PI) / 2 * erf(2.0));
    float f = 1.0f;
    for (int i = 0; i < 10; i++) f = f * 1.1f + sinf(f);
    printf("float iter=%.5f tanhf=%.6f expf=%.6f\n", f, tanhf(0.75f), expf(1.25f));
    int e;
    double m = frexp(48.0, &e);
    printf("frexp=%.4f e=%d ldexp=%.1f logb=%.1f\n", m, e, ldexp(0.75, 6), logb(1000.0));
    printf("lround=%ld llrint=%lld\n", lround(2.5), llrint(-3.5));
    return 0;
}
