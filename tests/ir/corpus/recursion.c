unsigned long fib(unsigned n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
double power(double x, int n) { if (n == 0) return 1.0; double h = power(x, n / 2); return (n & 1) ? h * h * x : h * h; }
int ack(int m, int n) { if (m == 0) return n + 1; if (n == 0) return ack(m - 1, 1); return ack(m - 1, ack(m, n - 1)); }
