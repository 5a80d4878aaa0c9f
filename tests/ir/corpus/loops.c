#include <math.h>
double dot(const double *a, const double *b, int n) { double s = 0; for (int i = 0; i < n; i++) s += a[i] * b[i]; return s; }
void saxpy(float a, const float *x, float *y, int n) { for (int i = 0; i < n; ++i) y[i] += a * x[i]; }
double poly(double x) { double r = 0; int k = 0; while (k < 10) { r = r * x + sin(x) / (k + 1); k++; } do { r -= 1; } while (r > 100); return r; }
