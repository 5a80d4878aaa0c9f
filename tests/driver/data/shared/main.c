#include <stdio.h>
double circle_area(double r);
double hyp(double a, double b);
int main(void) { printf("%.10f %.10f\n", circle_area(1.5), hyp(3, 4)); return 0; }
