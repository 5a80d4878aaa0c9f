#include <stdlib.h>
#include <string.h>
int counter = 5; static double weights[4] = {0.1, 0.2, 0.3, 1e300}; const char *msg = "hello\n\t\"q\"";
int *ptr_to_counter = &counter; double *wp = &weights[2]; float fl = 3.14159f; long double ld = 1.5L; _Thread_local int tl;
double total(void) { double s = 0; for (int i = 0; i < 4; i++) s += weights[i]; counter++; tl += 1; return s + ld + fl; }
double *copy(int n) { double *p = malloc(n * sizeof(double)); memcpy(p, weights, 4 * sizeof(double)); memset(p, 0, n); return p; }
