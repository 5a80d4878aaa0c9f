/* qsort and bsearch with several comparators, including on structs. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_int(const void *a, const void *b) {
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}
static int cmp_int_desc(const void *a, const void *b) { return cmp_int(b, a); }
static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

typedef struct { const char *name; double price; int qty; } Item;
static int cmp_item(const void *a, const void *b) {
    const Item *x = a, *y = b;
    if (x->price != y->price) return x->price < y->price ? -1 : 1;
    return strcmp(x->name, y->name);
}

int main(void) {
    int xs[40];
    unsigned s = 12345;
    for (int i = 0; i < 40; i++) { s = s * 1103515245u + 12345u; xs[i] = (int)((s >> 16) % 1000); }
    qsort(xs, 40, sizeof xs[0], cmp_int);
    for (int i = 0; i < 40; i++) printf("%d%c", xs[i], i == 39 ? '\n' : ' ');
    int keys[] = {xs[0], xs[17], xs[39], -5, 1001};
    for (int k = 0; k < 5; k++) {
        int *hit = bsearch(&keys[k], xs, 40, sizeof xs[0], cmp_int);
        printf("key %d: %s\n", keys[k], hit ? "found" : "missing");
    }
    qsort(xs, 40, sizeof xs[0], cmp_int_desc);
    printf("desc first=%d last=%d\n", xs[0], xs[39]);
    const char *words[] = {"pear", "apple", "fig", "banana", "cherry", "date"};
    qsort(words, 6, sizeof words[0], cmp_str);
    for (int i = 0; i < 6; i++) printf("%s ", words[i]);
    printf("\n");
    const char *needle = "date";
    const char **w = bsearch(&needle, words, 6, sizeof words[0], cmp_str);
    printf("date at %ld\n", w ? (long)(w - words) : -1L);
    Item items[] = {{"nut", 0.5, 100}, {"bolt", 0.5, 40}, {"gear", 12.0, 3}, {"axle", 7.25, 8}};
    qsort(items, 4, sizeof items[0], cmp_item);
    for (int i = 0; i < 4; i++) printf("%s %.2f %d\n", items[i].name, items[i].price, items[i].qty);
    return 0;
}
