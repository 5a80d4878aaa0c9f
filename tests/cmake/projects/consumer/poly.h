#ifndef POLY_H
#define POLY_H
/* p(x) = x^3 - 2x, defined in the static library `poly`. */
double poly(double x);
#endif
