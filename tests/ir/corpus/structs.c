struct P { double x, y; int tag; char name[8]; };
union U { double d; long l; float f[2]; };
struct P mk(double x, double y) { struct P p = { x, y, 3, "abc" }; return p; }
double norm2(struct P *p) { return p->x * p->x + p->y * p->y; }
long bits(double d) { union U u; u.d = d; return u.l ^ (long)u.f[1]; }
struct __attribute__((packed)) Q { char c; int i; } gq = { 'a', 7 };
int getq(void) { return gq.i; }
