/* C99 complex numbers: arithmetic (incl. __muldc3/__divdc3 at -O0), cabs, cexp, roots of unity. */
#include <complex.h>
#include <math.h>
#define PI 3.14159265358979323846
#include <stdio.h>

static void show(const char *tag, double complex z) { printf("%s = %.6f %+.6fi\n", tag, creal(z), cimag(z)); }

static double complex poly(double complex z) { return z * z * z - 2.0 * z + 1.0; }

int main(void) {
    double complex a = 1.0 + 2.0 * I, b = 3.0 - 1.0 * I;
    show("a+b", a + b);
    show("a*b", a * b);
    show("a/b", a / b);
    show("conj(a)", conj(a));
    printf("|a|=%.9f arg=%.9f\n", cabs(a), carg(a));
    show("exp(i*pi/3)", cexp(I * PI / 3));
    show("csqrt(-4)", csqrt(-4.0 + 0.0 * I));
    double complex sum = 0;
    for (int k = 0; k < 8; k++) sum += cexp(2.0 * PI * I * k / 8.0);
    printf("sum roots |.|<1e-12: %d\n", cabs(sum) < 1e-12);
    double complex z = 0.5 + 0.5 * I;
    for (int i = 0; i < 20; i++) z = z - poly(z) / (3.0 * z * z - 2.0);
    show("newton root", z);
    float complex fz = 1.5f - 0.5f * I;
    fz = fz * fz;
    printf("float complex %.4f %.4f\n", (double)crealf(fz), (double)cimagf(fz));
    long double complex lz = 2.0L + 1.0L * I;
    lz = lz * lz;
    printf("ld complex %.4Lf %.4Lf\n", creall(lz), cimagl(lz));
    return 0;
}
