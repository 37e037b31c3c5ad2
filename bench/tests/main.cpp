// The harness tests' entry point: the statistics, JSON, CLI and numerics of dg-bench, on the host.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>
