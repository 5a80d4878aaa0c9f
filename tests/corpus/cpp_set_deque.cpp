// std::set, std::multiset, std::unordered_set, std::deque, std::list, std::queue, std::stack, std::priority_queue.
#include <cstdio>
#include <deque>
#include <list>
#include <queue>
#include <set>
#include <stack>
#include <unordered_set>
#include <vector>

int main() {
    std::set<int> s{5, 1, 9, 3, 7, 3, 1};
    s.insert(4);
    s.erase(9);
    for (int x : s) std::printf("%d ", x);
    std::printf("| size=%zu contains7=%d lower(6)=%d\n", s.size(), s.count(7) == 1, *s.lower_bound(6));
    std::multiset<char> ms{'b', 'a', 'b', 'c', 'b'};
    std::printf("multiset count(b)=%zu first=%c\n", ms.count('b'), *ms.begin());
    std::unordered_set<long> seen;
    long x = 1, steps = 0;
    while (seen.insert(x).second) { x = (x * x + 1) % 1000003; ++steps; }
    std::printf("cycle after %ld steps\n", steps);
    std::deque<int> dq;
    for (int i = 0; i < 10; ++i) { if (i % 2) dq.push_front(i); else dq.push_back(i); }
    dq.pop_front();
    dq.pop_back();
    for (int v : dq) std::printf("%d ", v);
    std::printf("| front=%d back=%d [3]=%d\n", dq.front(), dq.back(), dq[3]);
    std::list<int> lst{4, 8, 15, 16, 23, 42};
    lst.remove_if([](int v) { return v % 2; });
    lst.reverse();
    lst.push_front(0);
    for (int v : lst) std::printf("%d ", v);
    std::printf("\n");
    std::queue<int> q;
    std::stack<int> st;
    for (int i = 1; i <= 5; ++i) { q.push(i * i); st.push(i * i); }
    while (!q.empty()) { std::printf("%d/%d ", q.front(), st.top()); q.pop(); st.pop(); }
    std::printf("\n");
    std::priority_queue<int> pq;
    std::priority_queue<int, std::vector<int>, std::greater<int>> minq;
    for (int v : {5, 2, 8, 1, 9, 3}) { pq.push(v); minq.push(v); }
    while (!pq.empty()) { std::printf("%d,%d ", pq.top(), minq.top()); pq.pop(); minq.pop(); }
    std::printf("\n");
    return 0;
}
