double poly3(double x) { return ((2.0 * x - 3.0) * x + 0.5) * x - 7.0; }
