// corpus-flags: -g
// iostream output: manipulators (setw, setprecision, fixed, scientific, hex, showpos, boolalpha), cerr-free.
#include <iomanip>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

struct Row { std::string name; int qty; double price; };

int main() {
    std::cout << "Hello, iostream!" << std::endl;
    std::cout << 42 << ' ' << -7L << ' ' << 3.14159 << ' ' << 'c' << ' ' << true << '\n';
    std::cout << std::boolalpha << true << ' ' << false << std::noboolalpha << '\n';
    std::cout << std::hex << 255 << ' ' << std::showbase << 255 << ' ' << std::uppercase << 48879 << std::dec << std::nouppercase << std::noshowbase << '\n';
    std::cout << std::oct << 64 << std::dec << ' ' << std::showpos << 5 << ' ' << -5 << std::noshowpos << '\n';
    std::cout << std::fixed << std::setprecision(3) << 2.0 / 3 << ' ' << std::scientific << 12345.6789 << std::defaultfloat << '\n';
    std::cout << std::setprecision(10) << 1.0 / 7 << ' ' << std::setprecision(6) << 1e-20 << '\n';
    std::vector<Row> rows{{"widget", 3, 4.5}, {"gadget", 12, 19.99}, {"doohickey", 150, 0.25}};
    std::cout << std::left << std::setw(12) << "name" << std::right << std::setw(6) << "qty" << std::setw(10) << "total" << '\n';
    double grand = 0;
    for (const auto &r : rows) {
        double tot = r.qty * r.price;
        grand += tot;
        std::cout << std::left << std::setw(12) << r.name << std::right << std::setw(6) << r.qty << std::setw(10) << std::fixed
                  << std::setprecision(2) << tot << '\n';
    }
    std::cout << std::setfill('.') << std::setw(28) << grand << std::setfill(' ') << '\n';
    std::ostringstream os;
    os << std::setw(5) << std::setfill('0') << 42 << "|" << std::string(3, '-');
    std::cout << os.str() << '\n';
    std::istringstream is("10 20 30 forty");
    int x, total = 0;
    while (is >> x) total += x;
    std::cout << "parsed total=" << total << " fail=" << is.fail() << std::endl;
    std::cout.write("raw write\n", 10);
    std::cout.put('!').put('\n');
    std::cout << std::flush;
    return 0;
}
