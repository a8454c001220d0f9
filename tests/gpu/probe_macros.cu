// Every form of threadmap_probe.h's macros, compiled with the probes on and off.
#include <threadmap_probe.h>

extern "C" __global__ void probe_macros(int n) {
  THREADMAP_PROBE1(0, 0, 0, n);
  THREADMAP_PROBE(0, 1, 1, n, n + 1);
  THREADMAP_PROBE3(0, 2, 2, n, n + 1, n + 2);
  THREADMAP_PROBE_IF(n > 0, 0, 3, 3, n);
  THREADMAP_PROBE_IF(n > 0, 0, 4, 4, n, n + 1);
  THREADMAP_PROBE_IF(n > 0, 0, 5, 5, n, n + 1, n + 2);
}
