#include "stats.h"
int main(void) {
    double v[] = {2.5, 3.25, -1.0, 7.5, 0.125, 4.0};
    show("mean", mean(v, 6));
    show("stddev", stddev(v, 6));
    return 0;
}
