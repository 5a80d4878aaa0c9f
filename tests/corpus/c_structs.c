/* corpus-flags: -g */
/* Structs: by value, by pointer, nested, arrays of structs, returning structs. */
#include <stdio.h>
#include <string.h>

typedef struct { double x, y; } Vec2;
typedef struct { Vec2 min, max; } Box;
typedef struct { char name[16]; int age; double score; } Person;
typedef struct { char c; long l; short s; } Padded;
typedef struct { int a, b, c, d, e, f, g, h; } Big;

static Vec2 vadd(Vec2 a, Vec2 b) { Vec2 r = {a.x + b.x, a.y + b.y}; return r; }
static Vec2 vscale(Vec2 a, double s) { return (Vec2){a.x * s, a.y * s}; }
static double area(const Box *b) { return (b->max.x - b->min.x) * (b->max.y - b->min.y); }
static Big make_big(int s) { Big b = {s, s + 1, s + 2, s + 3, s + 4, s + 5, s + 6, s + 7}; return b; }
static int sum_big(Big b) { return b.a + b.b + b.c + b.d + b.e + b.f + b.g + b.h; }

static Box grow(Box b, double d) {
    b.min = vadd(b.min, (Vec2){-d, -d});
    b.max = vadd(b.max, (Vec2){d, d});
    return b;
}

int main(void) {
    Vec2 a = {1.5, 2.0}, b = {-0.5, 4.0};
    Vec2 c = vscale(vadd(a, b), 3.0);
    printf("c=(%.3f, %.3f)\n", c.x, c.y);
    Box box = {{0, 0}, {2, 3}};
    printf("area=%.3f grown=%.3f\n", area(&box), area(&(Box){grow(box, 0.5).min, grow(box, 0.5).max}));

    Person people[3] = {{"alice", 31, 88.5}, {"bob", 25, 92.25}, {"carol", 47, 79.0}};
    Person *oldest = &people[0];
    for (int i = 1; i < 3; i++)
        if (people[i].age > oldest->age) oldest = &people[i];
    printf("oldest=%s (%d)\n", oldest->name, oldest->age);
    Person copy = people[1];
    strcpy(copy.name, "bobby");
    printf("copy=%s orig=%s score=%.2f\n", copy.name, people[1].name, copy.score);

    printf("sizeof Padded=%zu Big=%zu\n", sizeof(Padded), sizeof(Big));
    Big bg = make_big(10);
    printf("sum_big=%d\n", sum_big(bg));
    Padded p = {'x', 1234567890123L, -7};
    printf("padded %c %ld %d\n", p.c, p.l, p.s);
    return 0;
}
