/* d/dx p(x) = 3x^2 - 2 at x = 3: expect 25.  p lives in libpoly.a. */
#include <enzyme.h>
#include <stdio.h>

#include "poly.h"

int main(void) {
    printf("%.6f\n", __enzyme_autodiff((void *)poly, 3.0));
    return 0;
}
