#include <stdio.h>
#include <stdlib.h>

static void at_exit_handler(void) { puts("atexit"); }
__attribute__((constructor(200))) static void second(void) { puts("ctor 200"); }
__attribute__((constructor(101))) static void first(void) { puts("ctor 101"); }
__attribute__((constructor)) static void plain(void) { puts("ctor default"); atexit(at_exit_handler); }
__attribute__((destructor)) static void fini(void) { puts("dtor"); }

int main(void) { puts("main"); return 0; }
