#include <stdio.h>
#include "util.h"
int main(void) {
    vec2 v = {1.0, 2.0};
    double acc = 0;
    for (int i = 0; i < 10; i++) { v = rot(v, 0.3); acc += dot2(v, (vec2){0.5, -1.5}); }
    printf("%.12f %.12f %.12f calls=%d\n", v.x, v.y, acc, calls);
    return 0;
}
