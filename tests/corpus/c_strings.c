/* corpus-flags: -g */
/* Strings: string.h, ctype, snprintf, tokenizing, reversing, searching. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void reverse(char *s) {
    size_t n = strlen(s);
    for (size_t i = 0; i < n / 2; i++) { char t = s[i]; s[i] = s[n - 1 - i]; s[n - 1 - i] = t; }
}

static int is_palindrome(const char *s) {
    const char *e = s + strlen(s) - 1;
    while (s < e) {
        while (s < e && !isalnum((unsigned char)*s)) s++;
        while (s < e && !isalnum((unsigned char)*e)) e--;
        if (tolower((unsigned char)*s) != tolower((unsigned char)*e)) return 0;
        s++, e--;
    }
    return 1;
}

int main(void) {
    char buf[128];
    strcpy(buf, "The quick brown fox");
    strcat(buf, " jumps over the lazy dog");
    printf("len=%zu\n", strlen(buf));
    char *p = strstr(buf, "fox");
    printf("fox at %ld\n", (long)(p - buf));
    char copy[128];
    memcpy(copy, buf, sizeof buf);
    reverse(copy);
    printf("rev=%s\n", copy);
    int words = 0;
    for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) words++;
    printf("words=%d\n", words);
    for (char *q = buf; *q; q++) *q = (char)toupper((unsigned char)*q);
    printf("upper=%s\n", buf);
    printf("cmp=%d %d %d\n", strcmp("abc", "abd") < 0, strncmp("hello", "help", 3), strcmp("b", "a") > 0);
    printf("pal=%d %d\n", is_palindrome("A man, a plan, a canal: Panama"), is_palindrome("not one"));
    char num[32];
    snprintf(num, sizeof num, "%d:%x:%o:%e", 255, 255, 255, 255.0);
    printf("%s\n", num);
    printf("atoi=%d strtol=%ld strtod=%.3f\n", atoi("  -42xyz"), strtol("ff", NULL, 16), strtod("2.5e3", NULL));
    memmove(buf + 4, buf, 10);
    buf[14] = 0;
    printf("memmove=%s\n", buf);
    const char *c = strchr("a,b;c", ';');
    printf("strchr=%s spn=%zu cspn=%zu\n", c, strspn("aaabbc", "ab"), strcspn("hello, world", ", "));
    return 0;
}
