/* d/dx x^3 at x = 2: expect 12. */
#include <enzyme.h>
#include <stdio.h>

static double f(double x) { return x * x * x; }

int main(void) {
    printf("%.6f\n", __enzyme_autodiff((void *)f, 2.0));
    return 0;
}
