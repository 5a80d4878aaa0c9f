#ifndef UTIL_H
#define UTIL_H
typedef struct { double x, y; } vec2;
double dot2(vec2 a, vec2 b);
vec2 rot(vec2 v, double angle);
extern int calls;
#endif
