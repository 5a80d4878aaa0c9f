/* Not differentiated, links the library that EnzymePy compiled: p(3) = 21. */
#include <stdio.h>

#include "poly.h"

int main(void) {
    printf("%.6f\n", poly(3.0));
    return 0;
}
