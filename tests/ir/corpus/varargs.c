#include <stdarg.h>
#include <stdio.h>
double sum(int n, ...) { va_list ap; va_start(ap, n); double s = 0; for (int i = 0; i < n; i++) s += va_arg(ap, double); va_end(ap); return s; }
int main(void) { printf("%f %d\n", sum(3, 1.0, 2.0, 3.5), 42); return 0; }
