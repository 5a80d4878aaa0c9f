// The smallest EnzymePy program: d/dx of x^2 + 3x at x = 2 (expect 7).
//   enzyme-cc -O2 examples/square.c -o square && ./square
#include <stdio.h>

double __enzyme_autodiff(void *, double);

static double f(double x) { return x * x + 3.0 * x; }

int main(void) {
    double x = 2.0;
    double dfdx = __enzyme_autodiff((void *)f, x);
    printf("f(%g) = %g, f'(%g) = %g\n", x, f(x), x, dfdx);
    return dfdx == 7.0 ? 0 : 1;
}
