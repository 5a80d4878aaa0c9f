/* corpus-flags: -g */
/* Open-addressing hash table of strings with FNV-1a, word counting. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAP 256
typedef struct { char key[24]; int count; int used; } Slot;
static Slot table[CAP];

static unsigned fnv1a(const char *s) {
    unsigned h = 2166136261u;
    while (*s) { h ^= (unsigned char)*s++; h *= 16777619u; }
    return h;
}

static void add(const char *w) {
    unsigned i = fnv1a(w) % CAP;
    while (table[i].used && strcmp(table[i].key, w) != 0) i = (i + 1) % CAP;
    if (!table[i].used) { table[i].used = 1; strncpy(table[i].key, w, sizeof table[i].key - 1); }
    table[i].count++;
}

static int by_count(const void *a, const void *b) {
    const Slot *x = a, *y = b;
    if (x->count != y->count) return y->count - x->count;
    return strcmp(x->key, y->key);
}

int main(void) {
    const char *text = "the cat sat on the mat the dog sat on the log and the cat saw the dog "
                       "a bird sat on a wire and the bird sang to the cat on the mat";
    char word[24];
    int n = 0;
    for (const char *p = text;; p++) {
        if (*p == ' ' || *p == 0) {
            if (n) { word[n] = 0; add(word); n = 0; }
            if (!*p) break;
        } else if (n < 23) word[n++] = *p;
    }
    Slot *arr = malloc(sizeof table);
    int m = 0;
    for (int i = 0; i < CAP; i++) if (table[i].used) arr[m++] = table[i];
    qsort(arr, (size_t)m, sizeof *arr, by_count);
    for (int i = 0; i < m; i++) printf("%-5s %d\n", arr[i].key, arr[i].count);
    printf("distinct=%d hash(the)=%08x\n", m, fnv1a("the"));
    free(arr);
    return 0;
}
