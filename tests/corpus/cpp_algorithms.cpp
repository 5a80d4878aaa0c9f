// <algorithm>/<numeric>: sort, unique, partition, transform, accumulate, permutations, binary search.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <iterator>
#include <numeric>
#include <vector>

static void show(const char *tag, const std::vector<int> &v) {
    std::printf("%s:", tag);
    for (int x : v) std::printf(" %d", x);
    std::printf("\n");
}

int main() {
    std::vector<int> v(20);
    std::iota(v.begin(), v.end(), -5);
    std::vector<int> w;
    std::transform(v.begin(), v.end(), std::back_inserter(w), [](int x) { return (x * 37) % 11; });
    show("w", w);
    std::sort(w.begin(), w.end());
    show("sorted", w);
    w.erase(std::unique(w.begin(), w.end()), w.end());
    show("unique", w);
    std::printf("sum=%d product=%ld\n", std::accumulate(v.begin(), v.end(), 0),
                std::accumulate(v.begin() + 6, v.begin() + 12, 1L, std::multiplies<long>()));
    std::printf("binary_search(3)=%d lower_bound(4)=%ld\n", std::binary_search(w.begin(), w.end(), 3),
                long(std::lower_bound(w.begin(), w.end(), 4) - w.begin()));
    auto mm = std::minmax_element(v.begin(), v.end());
    std::printf("min=%d max=%d count_if(even)=%ld\n", *mm.first, *mm.second, long(std::count_if(v.begin(), v.end(), [](int x) { return x % 2 == 0; })));
    std::vector<int> p = v;
    auto mid = std::partition(p.begin(), p.end(), [](int x) { return x < 0; });
    std::printf("negatives=%ld\n", long(mid - p.begin()));
    std::vector<int> perm{1, 2, 3, 4};
    int count = 0;
    do { ++count; } while (std::next_permutation(perm.begin(), perm.end()));
    std::printf("permutations=%d\n", count);
    std::vector<int> r = v;
    std::reverse(r.begin(), r.end());
    std::rotate(r.begin(), r.begin() + 3, r.end());
    show("rot", r);
    std::nth_element(r.begin(), r.begin() + 10, r.end());
    std::printf("nth(10)=%d\n", r[10]);
    std::vector<int> a{1, 3, 5, 7, 9}, b{2, 3, 5, 8}, out;
    std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    show("intersect", out);
    out.clear();
    std::merge(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(out));
    show("merge", out);
    std::vector<int> ps(6);
    std::partial_sum(a.begin(), a.end(), ps.begin());
    std::printf("partial last=%d inner=%d all_pos=%d any_gt8=%d\n", ps[4], std::inner_product(a.begin(), a.begin() + 4, b.begin(), 0),
                std::all_of(a.begin(), a.end(), [](int x) { return x > 0; }), std::any_of(a.begin(), a.end(), [](int x) { return x > 8; }));
    std::printf("gcd=%d lcm=%d\n", std::gcd(84, 36), std::lcm(4, 6));
    return 0;
}
