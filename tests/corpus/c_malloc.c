/* malloc/calloc/realloc/free: growable arrays, linked lists, binary trees. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct Node { int v; struct Node *next; } Node;
typedef struct Tree { int key; struct Tree *l, *r; } Tree;

static Tree *insert(Tree *t, int k) {
    if (!t) { t = malloc(sizeof *t); t->key = k; t->l = t->r = NULL; return t; }
    if (k < t->key) t->l = insert(t->l, k); else if (k > t->key) t->r = insert(t->r, k);
    return t;
}
static int height(const Tree *t) { if (!t) return 0; int a = height(t->l), b = height(t->r); return 1 + (a > b ? a : b); }
static void inorder(const Tree *t, int *out, int *n) { if (!t) return; inorder(t->l, out, n); out[(*n)++] = t->key; inorder(t->r, out, n); }
static void free_tree(Tree *t) { if (!t) return; free_tree(t->l); free_tree(t->r); free(t); }

int main(void) {
    size_t cap = 2, len = 0;
    long *arr = malloc(cap * sizeof *arr);
    for (long i = 0; i < 1000; i++) {
        if (len == cap) { cap *= 2; arr = realloc(arr, cap * sizeof *arr); }
        arr[len++] = i * i - 3 * i;
    }
    long s = 0;
    for (size_t i = 0; i < len; i++) s += arr[i];
    printf("len=%zu cap=%zu sum=%ld\n", len, cap, s);
    free(arr);

    Node *head = NULL;
    for (int i = 0; i < 10; i++) { Node *n = malloc(sizeof *n); n->v = i * 3; n->next = head; head = n; }
    Node *prev = NULL;
    while (head) { Node *nx = head->next; head->next = prev; prev = head; head = nx; }
    head = prev;
    for (Node *n = head; n; n = n->next) printf("%d ", n->v);
    printf("\n");
    while (head) { Node *nx = head->next; free(head); head = nx; }

    int *z = calloc(50, sizeof *z);
    int nz = 0;
    for (int i = 0; i < 50; i++) nz += z[i] != 0;
    printf("calloc nonzero=%d\n", nz);
    free(z);

    Tree *t = NULL;
    unsigned st = 7;
    for (int i = 0; i < 200; i++) { st = st * 69069u + 1u; t = insert(t, (int)(st >> 20) % 500); }
    int out[500], n = 0;
    inorder(t, out, &n);
    printf("tree size=%d height=%d min=%d max=%d\n", n, height(t), out[0], out[n - 1]);
    free_tree(t);

    char *str = strdup("dynamic");
    str = realloc(str, 64);
    strcat(str, " string grows");
    printf("%s\n", str);
    free(str);
    return 0;
}
