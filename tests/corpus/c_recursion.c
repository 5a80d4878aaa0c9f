/* Recursion: fib, ackermann, mutual recursion, hanoi, permutations, flood fill. */
#include <stdio.h>

static long fib(int n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
static int ack(int m, int n) {
    if (m == 0) return n + 1;
    if (n == 0) return ack(m - 1, 1);
    return ack(m - 1, ack(m, n - 1));
}
static int is_odd(unsigned n);
static int is_even(unsigned n) { return n == 0 ? 1 : is_odd(n - 1); }
static int is_odd(unsigned n) { return n == 0 ? 0 : is_even(n - 1); }

static int moves;
static void hanoi(int n, char from, char to, char via) {
    if (n == 0) return;
    hanoi(n - 1, from, via, to);
    moves++;
    hanoi(n - 1, via, to, from);
}

static int perm_count;
static void permute(char *s, int k, int n) {
    if (k == n) { if (perm_count++ < 6) printf("%s\n", s); return; }
    for (int i = k; i < n; i++) {
        char t = s[k]; s[k] = s[i]; s[i] = t;
        permute(s, k + 1, n);
        t = s[k]; s[k] = s[i]; s[i] = t;
    }
}

static char grid[8][9] = {
    "........", ".##.....", ".#..###.", ".#..#...", "....#.##", "###.#...", "....####", "........"};
static int fill(int r, int c) {
    if (r < 0 || r >= 8 || c < 0 || c >= 8 || grid[r][c] != '.') return 0;
    grid[r][c] = 'o';
    return 1 + fill(r + 1, c) + fill(r - 1, c) + fill(r, c + 1) + fill(r, c - 1);
}

int main(void) {
    printf("fib(25)=%ld\n", fib(25));
    printf("ack(2,3)=%d ack(3,3)=%d\n", ack(2, 3), ack(3, 3));
    printf("even(17)=%d odd(17)=%d\n", is_even(17), is_odd(17));
    hanoi(12, 'A', 'C', 'B');
    printf("hanoi moves=%d\n", moves);
    char s[] = "abcd";
    permute(s, 0, 4);
    printf("perms=%d\n", perm_count);
    printf("filled=%d\n", fill(0, 0));
    for (int r = 0; r < 8; r++) puts(grid[r]);
    return 0;
}
