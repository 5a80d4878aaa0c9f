/* printf formatting: widths, precisions, flags, %g, %a, %n-free, puts/putchar/fputs. */
#include <stddef.h>
#include <stdio.h>

int main(void) {
    printf("[%5d] [%-5d] [%05d] [%+d] [% d]\n", 42, 42, 42, 42, 42);
    printf("[%x] [%X] [%#x] [%o] [%#o] [%lu]\n", 3054, 3054, 3054, 8, 8, 123456789UL);
    printf("[%f] [%.2f] [%10.3f] [%-10.1f] [%e] [%.3E]\n", 3.14159, 3.14159, -3.14159, 2.5, 12345.678, 0.000123);
    printf("[%g] [%g] [%g] [%.3g] [%G]\n", 100000.0, 1000000.0, 0.0001, 3.14159, 1e-10);
    printf("[%a] [%A]\n", 1.0, -0.375);
    printf("[%s] [%10s] [%-10s] [%.3s] [%c%c]\n", "str", "right", "left", "truncate", 'o', 'k');
    printf("[%*d] [%-*d] [%.*f]\n", 6, 7, 4, 8, 3, 2.718281828);
    printf("[%hhd] [%hd] [%lld] [%zu] [%td]\n", (signed char)300, (short)70000, -9000000000LL, sizeof(long), (ptrdiff_t)-4);
    printf("[%%] [%5.1f%%]\n", 99.5);
    puts("puts line");
    fputs("fputs line\n", stdout);
    for (char c = 'a'; c <= 'e'; c++) putchar(c);
    putchar('\n');
    char buf[16];
    int n = snprintf(buf, sizeof buf, "%s-%d", "overflowing-text", 12345);
    printf("n=%d buf=%s\n", n, buf);
    fprintf(stdout, "%d items at %.2f = %.2f\n", 3, 1.25, 3 * 1.25);
    return 0;
}
