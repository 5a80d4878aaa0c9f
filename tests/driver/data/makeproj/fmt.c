#include <stdio.h>
#include "stats.h"
void show(const char *name, double value) { printf("%-8s %12.6f\n", name, value); }
