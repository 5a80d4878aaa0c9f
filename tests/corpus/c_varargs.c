/* Varargs: va_list, va_copy, mixed int/double arguments, vsnprintf. */
#include <stdarg.h>
#include <stdio.h>

static long sum_ints(int n, ...) {
    va_list ap;
    va_start(ap, n);
    long s = 0;
    for (int i = 0; i < n; i++) s += va_arg(ap, int);
    va_end(ap);
    return s;
}

static double mixed(const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    double total = 0;
    for (const char *p = fmt; *p; p++) {
        if (*p == 'i') total += va_arg(ap, int);
        else if (*p == 'd') total += va_arg(ap, double);
        else if (*p == 'l') total += (double)va_arg(ap, long long);
    }
    int first = (*fmt == 'i') ? va_arg(ap2, int) : -1;
    va_end(ap2);
    va_end(ap);
    return total + first;
}

static void logf_(char *buf, size_t n, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, n, fmt, ap);
    va_end(ap);
}

int main(void) {
    printf("%ld\n", sum_ints(5, 1, 2, 3, 4, 5));
    printf("%ld\n", sum_ints(0));
    printf("%.3f\n", mixed("idld", 3, 2.5, 10000000000LL, 0.25));
    printf("%.3f\n", mixed("dddddddddi", 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 10));
    char buf[64];
    logf_(buf, sizeof buf, "[%s:%d] %5.2f|%-4s|", "file", 12, 3.14159, "ab");
    puts(buf);
    return 0;
}
