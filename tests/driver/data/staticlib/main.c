#include <stdio.h>
double poly3(double x);
int main(void) {
    for (int i = -2; i <= 2; i++) printf("p(%d) = %.6f\n", i, poly3(i));
    return 0;
}
