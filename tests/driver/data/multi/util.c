#include <math.h>
#include "util.h"
int calls;
double dot2(vec2 a, vec2 b) { calls++; return a.x * b.x + a.y * b.y; }
vec2 rot(vec2 v, double t) { calls++; vec2 r = {v.x * cos(t) - v.y * sin(t), v.x * sin(t) + v.y * cos(t)}; return r; }
