#include "poly.h"

double poly(double x) { return x * x * x - 2.0 * x; }
