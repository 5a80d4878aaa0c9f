#include <math.h>
double circle_area(double r) { return M_PI * r * r; }
double hyp(double a, double b) { return sqrt(a * a + b * b); }
