// Templates: function and class templates, specialization, non-type params, SFINAE/if constexpr.
#include <cstdio>
#include <cstring>
#include <type_traits>

template <typename T> T maxOf(T a, T b) { return a < b ? b : a; }
template <> const char *maxOf<const char *>(const char *a, const char *b) { return std::strcmp(a, b) < 0 ? b : a; }

template <typename T, int N> struct Array {
    T data[N];
    constexpr int size() const { return N; }
    T &operator[](int i) { return data[i]; }
    T sum() const { T s{}; for (int i = 0; i < N; ++i) s += data[i]; return s; }
};

template <typename T> struct Stack {
    T items[32];
    int top = 0;
    void push(const T &v) { items[top++] = v; }
    T pop() { return items[--top]; }
    bool empty() const { return top == 0; }
};

template <typename T> struct TypeName { static const char *get() { return "other"; } };
template <> struct TypeName<int> { static const char *get() { return "int"; } };
template <> struct TypeName<double> { static const char *get() { return "double"; } };
template <typename T> struct TypeName<T *> { static const char *get() { return "pointer"; } };

template <typename T> auto describe(T v) {
    if constexpr (std::is_integral_v<T>) return v * 2;
    else if constexpr (std::is_floating_point_v<T>) return v / 2;
    else return 0;
}

template <unsigned N> struct Fact { static constexpr unsigned long long value = N * Fact<N - 1>::value; };
template <> struct Fact<0> { static constexpr unsigned long long value = 1; };

template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>> T square(T x) { return x * x; }

int main() {
    std::printf("%d %.2f %s\n", maxOf(3, 9), maxOf(2.5, -1.0), maxOf<const char *>("pear", "apple"));
    Array<double, 5> arr{{1.5, 2.5, 3.5, 4.5, 5.5}};
    arr[0] = 10;
    std::printf("size=%d sum=%.2f\n", arr.size(), arr.sum());
    Stack<int> st;
    for (int i = 0; i < 10; ++i) st.push(i * i);
    while (!st.empty()) std::printf("%d ", st.pop());
    std::printf("\n");
    std::printf("%s %s %s %s\n", TypeName<int>::get(), TypeName<double>::get(), TypeName<char *>::get(), TypeName<float>::get());
    std::printf("%d %.3f\n", describe(21), describe(5.0));
    std::printf("20!=%llu\n", Fact<20>::value);
    std::printf("square %d %.2f\n", square(12), square(1.5));
    return 0;
}
