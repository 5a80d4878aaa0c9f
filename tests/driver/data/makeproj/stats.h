double mean(const double *v, int n);
double stddev(const double *v, int n);
void show(const char *name, double value);
