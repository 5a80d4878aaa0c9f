/* Not differentiated: built by the project's compiler. f(x) = x^3 at x = 2. */
#include <stdio.h>

static double f(double x) { return x * x * x; }

int main(void) {
    printf("%.6f\n", f(2.0));
    return 0;
}
