/* Globals, static locals, const tables, extern-visible and internal state. */
#include <stdio.h>

int counter = 5;
static int hidden[10];
const double weights[5] = {0.1, 0.2, 0.3, 0.25, 0.15};
const char *const greeting = "hi there";
static struct { int id; const char *label; } registry[] = {{1, "one"}, {2, "two"}, {3, "three"}};
int *counter_ptr = &counter;
static int zero_init_array[100];

static int next_id(void) {
    static int id = 100;
    return id++;
}

static double running_mean(double x) {
    static double sum = 0;
    static int n = 0;
    sum += x;
    n++;
    return sum / n;
}

static const char *cached_name(int i) {
    static char buf[32];
    snprintf(buf, sizeof buf, "item-%03d", i);
    return buf;
}

int main(void) {
    for (int i = 0; i < 10; i++) hidden[i] = i * i + counter;
    *counter_ptr += 10;
    printf("counter=%d hidden[9]=%d\n", counter, hidden[9]);
    printf("ids: %d %d %d\n", next_id(), next_id(), next_id());
    double m = 0;
    for (int i = 1; i <= 5; i++) m = running_mean(i * weights[i - 1]);
    printf("mean=%.5f\n", m);
    printf("%s %s\n", greeting, cached_name(7));
    for (unsigned i = 0; i < sizeof registry / sizeof registry[0]; i++)
        printf("%d=%s\n", registry[i].id, registry[i].label);
    int z = 0;
    for (int i = 0; i < 100; i++) z += zero_init_array[i];
    printf("z=%d\n", z);
    return counter & 7;
}
