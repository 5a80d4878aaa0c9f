typedef double (*fn)(double);
static double sq(double x) { return x * x; }
static double cube(double x) { return x * x * x; }
fn table[] = { sq, cube };
double apply(fn f, double x) { return f(x); }
double run(int i, double x) { return apply(table[i & 1], x) + table[0](x); }
