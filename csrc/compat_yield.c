/* Vendor quirk kept out of the timed loops: the wait loop of some MPI builds
 * (the PyPI `mpich` wheel, built with per-VCI locking) calls sched_yield()
 * after every empty poll.  On a node that is not oversubscribed this system
 * call costs ~1 us per message and makes small-message latency ~5x worse
 * than the same MPICH built by Debian.
 *
 * Defining sched_yield here interposes on the library's call (the executable
 * comes first in the dynamic symbol lookup).  main() decides once, before any
 * timing, and every rank agrees: spin (return at once) when every host, and
 * every machine, runs no more ranks than there are CPUs in the union of its
 * ranks' affinity sets, really yield otherwise, so that oversubscribed runs (4
 * ranks on 2 cores, 2 ranks under `taskset -c 0`, or 16 emulated hosts in
 * network namespaces of one 2-core machine, each of which looks like a 2-CPU
 * host) still let the peer rank run.  A machine is a kernel: ranks with the
 * same /proc/sys/kernel/random/boot_id.  --yield on|off forces it. */
#define _GNU_SOURCE
#include <sched.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "compat_yield.h"

static volatile int fb_spin = 0;

int sched_yield(void)
{
    if (fb_spin) return 0;
    return (int)syscall(SYS_sched_yield);
}

void fb_set_yield(int spin) { fb_spin = spin; }
int fb_yield_spins(void) { return fb_spin; }
