/* Defines a symbol main also defines: pulling this member would be a
   duplicate definition, so the link proves members are pulled on demand. */
int main(void) { return 42; }
double never_called(double x) { return x; }
