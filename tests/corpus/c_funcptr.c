/* Function pointers: tables, callbacks, returning function pointers. */
#include <stdio.h>

typedef int (*binop)(int, int);
static int add(int a, int b) { return a + b; }
static int sub(int a, int b) { return a - b; }
static int mul(int a, int b) { return a * b; }
static int maxi(int a, int b) { return a > b ? a : b; }

static binop table[] = {add, sub, mul, maxi};
static const char *names[] = {"add", "sub", "mul", "max"};

static int fold(const int *xs, int n, binop f, int init) {
    for (int i = 0; i < n; i++) init = f(init, xs[i]);
    return init;
}

static binop pick(char c) {
    switch (c) { case '+': return add; case '-': return sub; case '*': return mul; default: return maxi; }
}

static void apply_all(double *xs, int n, double (*f)(double)) {
    for (int i = 0; i < n; i++) xs[i] = f(xs[i]);
}
static double twice(double x) { return 2 * x; }
static double sq(double x) { return x * x; }

struct ops { const char *name; double (*fn)(double); };

int main(void) {
    int xs[] = {3, 1, 4, 1, 5, 9, 2, 6};
    for (int i = 0; i < 4; i++) printf("%s -> %d\n", names[i], fold(xs, 8, table[i], i == 2 ? 1 : 0));
    const char *expr = "+-*?";
    for (const char *p = expr; *p; p++) printf("%c: %d\n", *p, pick(*p)(7, 3));
    double ds[4] = {1, 2, 3, 4};
    struct ops ops[] = {{"twice", twice}, {"sq", sq}};
    for (int k = 0; k < 2; k++) {
        apply_all(ds, 4, ops[k].fn);
        printf("%s: %.1f %.1f %.1f %.1f\n", ops[k].name, ds[0], ds[1], ds[2], ds[3]);
    }
    return 0;
}
